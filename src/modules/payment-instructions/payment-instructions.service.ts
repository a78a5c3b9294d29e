import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { requireCallerSupplier } from '../../core/suppliers.ts';
import { AppError } from '../../core/errors.ts';
import { conflictError, differences } from '../../core/conflicts.ts';
import { findImportedAccount, type ImportDeps } from '../imported-accounts/index.ts';
import type { Caller } from '../../core/caller.ts';
import type { CreatePaymentInstructionBody, CreatePaymentInstructionReply } from './payment-instructions.schemas.ts';
import * as repo from './payment-instructions.repository.ts';
import { createVendorClient } from './vendors/vendor-factory.ts';
import { isEndedStatus, type PaymentVendor, type VendorInstruction } from './vendors/vendor.ts';


/**
 * Verifies the instruction with its vendor and stores it as the account's one active instruction
 * (D8, D9). The vendor call is made with no transaction open: it can take seconds and retries, and
 * a connection held meanwhile would starve the pool. The single INSERT that follows is atomic on its
 * own; the partial unique index settles races between requests that both found no active instruction.
 */
async function createPaymentInstruction(
  { db, events }: ImportDeps, ask: AskVendor, caller: Caller, body: CreatePaymentInstructionBody,
): Promise<CreatePaymentInstructionReply> {
  const supplier = await requireCallerSupplier(caller, body.import_supplier, 'import_supplier');
  const account = await findImportedAccount(db, supplier.id, body.external_account_number);
  const vendor = await repo.findVendorByCode(db, body.vendor);
  if (!vendor) throw AppError.field('payment_vendor_not_found', `No payment vendor with code "${body.vendor}".`, 'vendor');
  const reply = { service_account_number: account.number, reference: body.reference };

  const event = (added: number) => ({
    supplierId: supplier.id, type: 'post_import.completed' as const, externalAccountNumber: body.external_account_number,
    data: { kind: 'payment_instruction' as const, added, already_existing: 1 - added },
  });
  const alreadyStored = async (active: ActiveInstruction) => {
    const same = sameOrConflict(active, vendor.id, body, reply);
    await db.transaction().execute((trx) => events.record(trx, [event(0)]));
    return same;
  };

  const active = await repo.findActiveInstruction(db, account.id);
  if (active) return alreadyStored(active);

  const result = await ask(vendor, body.reference);
  switch (result.outcome) {
    case 'not_found':
      throw AppError.field('payment_instruction_not_found', result.detail, 'reference');
    case 'rejected':
      throw new AppError('payment_vendor_rejected', `${result.detail} Do not retry the request as it is.`);
    case 'unavailable':
      throw new AppError('payment_vendor_unavailable', `${result.detail} Retry the request as it is.`);
    case 'found':
      break;
  }
  // Stored, it would be the account's one active instruction: billing would collect through a
  // cancelled mandate or an expired card.
  if (isEndedStatus(result.status)) {
    throw AppError.field('payment_instruction_not_active',
      `Payment vendor "${vendor.code}" reports instruction "${body.reference}" as "${result.status}": only a live instruction can be the account's active one.`, 'reference');
  }

  const stored = await db.transaction().execute(async (trx) => {
    const row = await repo.insertActiveInstruction(trx, {
      account_id: account.id, vendor_id: vendor.id, reference: body.reference, type: body.type,
      status: result.status, details: result.details,
    });
    if (row) await events.record(trx, [event(1)]);
    return row;
  });
  if (stored) return reply;
  // Another request stored an instruction while the vendor was being asked: the same one is success.
  const winner = await repo.findActiveInstruction(db, account.id);
  if (!winner) throw new Error('payment instruction insert conflicted but no active instruction exists');
  return alreadyStored(winner);
}

type ActiveInstruction = { vendor_id: number; reference: string; type: string };

/**
 * The account's active instruction is this one (the same vendor and reference) or another one. This
 * one sent again is already existing only when it is an exact repeat: another `type` is a `conflict`.
 */
function sameOrConflict(
  active: ActiveInstruction, vendorId: number, body: CreatePaymentInstructionBody, reply: CreatePaymentInstructionReply,
): CreatePaymentInstructionReply {
  if (active.vendor_id !== vendorId || active.reference !== body.reference) {
    throw new AppError('active_payment_instruction_exists', 'The account already has an active payment instruction with another vendor or reference.');
  }
  const errors = differences(`Payment instruction "${body.reference}"`, '', [{ name: 'type', stored: active.type, sent: body.type }]);
  if (errors.length > 0) throw conflictError(errors);
  return reply;
}

/** How the service asks a vendor about a reference: its client, with its retries and time limit. */
export type AskVendor = (vendor: PaymentVendor, reference: string) => Promise<VendorInstruction>;
export const askTheVendor: AskVendor = (vendor, reference) => createVendorClient(vendor).fetchInstruction(reference);

/** The payment instructions module as the composition root builds it (composition.ts). */
export interface PaymentInstructions {
  /** POST payment-instruction/create/: verified with the vendor, then stored as the account's active one. */
  create(caller: Caller, body: CreatePaymentInstructionBody): Promise<CreatePaymentInstructionReply>;
  /**
   * The same module over another handle of the store (a rehearsal's, which is one transaction): there
   * the vendor must not be asked with the transaction open, so `ask` answers instead (a pre-flight
   * asks the vendor itself, outside, and runs its rehearsal again with the answer).
   */
  on(db: Kysely<Database>, ask?: AskVendor): PaymentInstructions;
}

export function createPaymentInstructions(deps: ImportDeps, ask: AskVendor = askTheVendor): PaymentInstructions {
  return {
    create: (caller, body) => createPaymentInstruction(deps, ask, caller, body),
    on: (db, other = ask) => createPaymentInstructions({ ...deps, db }, other),
  };
}
