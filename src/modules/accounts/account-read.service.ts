import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Caller } from '../../core/caller.ts';
import { countNotes, findPinnedNotes } from '../notes/index.ts';
import { findStatements } from '../statements/index.ts';
import { findBalance, findOpenPeriodStart } from '../transactions/index.ts';
import {
  findAccountWithTeam, findActivePaymentInstruction, findCustomers, findSupplyAddresses, findSupplyPoints,
} from './account-read.repository.ts';
import type { AccountView } from './account-read.schemas.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import { documentLocation } from './document-location.ts';
import { accountNotFound } from '../imported-accounts/index.ts';

/**
 * The created account as the supplier can check it. An unknown or another organisation's supplier,
 * an unknown account and merely staged data all answer 404 account_not_found (D3, D8). Read in one
 * repeatable-read transaction so the balance, counts and lists are of one moment.
 */
export async function readAccount(
  db: Kysely<Database>, caller: Caller, bucket: string, supplierCode: string, externalAccountNumber: string,
): Promise<AccountView> {
  const supplier = await caller.findSupplier(supplierCode);
  if (!supplier) throw accountNotFound(externalAccountNumber, null);
  const located = (path: string) => ({ document_path: path, location: documentLocation(bucket, supplier.documents_root, path) });

  return db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
    const account = await findAccountWithTeam(trx, supplier.id, externalAccountNumber);
    if (!account) throw accountNotFound(externalAccountNumber, null);
    const [customers, addresses, points, ledger, periodStart, notesCount, pinned, statements, instruction] = [
      await findCustomers(trx, account.id), await findSupplyAddresses(trx, account.id), await findSupplyPoints(trx, account.id),
      await findBalance(trx, account.id), await findOpenPeriodStart(trx, account.id), await countNotes(trx, account.id),
      await findPinnedNotes(trx, account.id), await findStatements(trx, account.id), await findActivePaymentInstruction(trx, account.id),
    ];
    return {
      service_account_number: account.number,
      external_account_number: account.external_account_number,
      import_supplier: supplier.code,
      operations_team: account.team,
      created_at: utcSeconds(account.created_at),
      billing_address: {
        street_address: account.billing_street_address, locality: account.billing_locality,
        administrative_area: account.billing_administrative_area, country: account.billing_country, postal_code: account.billing_postal_code,
      },
      unknown_occupier: account.unknown_occupier,
      customers,
      supply_addresses: addresses.map(({ id, ...address }) => ({
        ...address,
        supply_points: points.filter((p) => p.supply_address_id === id).map(({ supply_address_id: _, ...point }) => point),
      })),
      balance: ledger.balance,
      transactions_count: ledger.count,
      open_statement_period_from: periodStart,
      notes_count: notesCount,
      pinned_notes: pinned.map((note) => ({
        created_at: utcSeconds(note.created_at),
        body: note.body,
        unpin_at: note.unpin_at ? utcSeconds(new Date(note.unpin_at)) : null,
        documents: (note.document_paths as string[]).map(located),
      })),
      statements: statements.map(({ statement_path, ...statement }) => ({ ...statement, document: statement_path ? located(statement_path) : null })),
      payment_instruction: instruction
        ? { ...instruction, details: (instruction.details ?? {}) as Record<string, unknown>, created_at: utcSeconds(instruction.created_at) }
        : null,
    };
  });
}
