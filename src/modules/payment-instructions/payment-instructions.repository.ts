import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

// Payment instructions and the rows they hang on. Free functions, executor first.
type Db = Kysely<Database>;

/** An account created from the supplier's staged data; merely staged data has no accounts row. */
export function findVendorByCode(db: Db, code: string) {
  return db.selectFrom('payment_vendors').selectAll().where('code', '=', code).executeTakeFirst();
}

export function findActiveInstruction(db: Db, accountId: number) {
  return db.selectFrom('payment_instructions').select(['id', 'vendor_id', 'reference', 'type'])
    .where('account_id', '=', accountId).where('active', '=', true)
    .executeTakeFirst();
}

export interface NewInstruction {
  account_id: number;
  vendor_id: number;
  reference: string;
  type: string;
  status: string | null;
  details: Record<string, unknown>;
}

/**
 * Inserts the account's active instruction. Returns undefined when the account already has one: the
 * partial unique index payment_instructions_active_key decides between concurrent requests. The
 * conflict is settled by ON CONFLICT rather than a caught error, so the caller's transaction (which
 * also writes the event) stays usable.
 */
export async function insertActiveInstruction(db: Db, values: NewInstruction): Promise<{ id: number } | undefined> {
  return db.insertInto('payment_instructions')
    .values({ ...values, details: JSON.stringify(values.details), active: true })
    .onConflict((oc) => oc.column('account_id').where('active', '=', true).doNothing())
    .returning('id').executeTakeFirst();
}
