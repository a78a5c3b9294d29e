import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

// Keyset pages of a supplier's import processes, in list order (staged_at, external_account_number).
// Each kind's WHERE matches one index of migration 002 (the pending and imported ones are partial),
// so a page costs an index range scan however many accounts the supplier has.

export const LIST_KINDS = ['all', 'pending', 'imported'] as const;
export type ListKind = (typeof LIST_KINDS)[number];

/** A position in list order; stagedAt is UTC with microseconds, the precision of timestamptz. */
export interface ListPosition { stagedAt: string; ext: string }

export interface ListRow {
  external_account_number: string;
  service_account_number: string | null;
  account_created_at: Date | null;
  staged_key: string;
  /** With the failures filter only: the latest attempt's error ('' attr: the error names no field). */
  last_error_code?: string | null;
  last_error_attr?: string | null;
  last_error_detail?: string | null;
}

export function listPage(
  db: Kysely<Database>, supplierId: number, kind: ListKind, after: ListPosition | null, limit: number, failedOnly = false,
): Promise<ListRow[]> {
  let query = db.selectFrom('account_imports as ai')
    .leftJoin('accounts as a', 'a.id', 'ai.account_id')
    .select([
      'ai.external_account_number',
      'a.number as service_account_number',
      'a.created_at as account_created_at',
      // Text, not a JS Date: a Date keeps milliseconds only and the keyset needs the exact value.
      sql<string>`to_char(ai.staged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('staged_key'),
    ])
    .where('ai.supplier_id', '=', supplierId);
  // Pending is work still to do: an account marked to skip will never be created (issue #14, docs/validation.md).
  if (kind === 'pending') query = query.where('ai.account_id', 'is', null).where('ai.skipped', '=', false);
  if (kind === 'imported') query = query.where('ai.account_id', 'is not', null);
  if (failedOnly) {
    // The WHERE of migration 007's account_imports_failing_list_idx; the attempt's detail by its id.
    query = query.where('ai.account_id', 'is', null).where('ai.skipped', '=', false).where('ai.last_attempt_outcome', '=', 'failed')
      .leftJoin('create_attempts as ca', 'ca.id', 'ai.last_attempt_id')
      .select(['ai.last_error_code', 'ai.last_error_attr', 'ca.error_detail as last_error_detail']) as unknown as typeof query;
  }
  if (after) {
    query = query.where(sql<boolean>`(ai.staged_at, ai.external_account_number) > (${after.stagedAt}::timestamptz, ${after.ext})`);
  }
  return query.orderBy('ai.staged_at').orderBy('ai.external_account_number').limit(limit).execute();
}
