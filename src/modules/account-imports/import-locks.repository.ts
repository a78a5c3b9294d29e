import { sql, type RawBuilder } from 'kysely';

// Coordination of creates across every instance over one PostgreSQL, with transaction-level
// advisory locks: PostgreSQL releases them at commit, at rollback and when the session ends, so an
// instance killed mid-create leaves nothing to clean up.
//
// - The account lock uses the one-bigint form with key (ACCOUNT_LOCK_SPACE << 32) | import id: the
//   high half keeps it apart from other bigint advisory keys (the migration lock, hashed keys), and
//   pg_locks shows it as classid = ACCOUNT_LOCK_SPACE, objid = import id, objsubid = 1.
// - Concurrency slots use the two-int4 form (SLOT_LOCK_SPACE, 1..N): a separate lock space
//   (objsubid = 2), so they can never meet an account lock.
//
// On PGlite there is one session, handed to one transaction at a time: locks are re-entrant there and
// creates simply run one after another, so neither lock can be contended and IN_PROGRESS is never seen.
export const ACCOUNT_LOCK_SPACE = 0x41494d50; // 'AIMP'
export const SLOT_LOCK_SPACE = 0x534c4f54; // 'SLOT'
const MAX_IMPORT_ID = 2 ** 32;

/** The bigint advisory key of an import process, as a decimal string (it passes 2^53). */
export function accountLockKey(importId: number): string {
  if (!Number.isInteger(importId) || importId < 0 || importId >= MAX_IMPORT_ID) {
    throw new Error(`import id ${importId} is outside the advisory key range`);
  }
  return ((BigInt(ACCOUNT_LOCK_SPACE) << 32n) | BigInt(importId)).toString();
}

/**
 * tryLockAccount as an SQL expression over an import id, so the query that finds the import process
 * also takes its lock. NULL (nothing tried) for an id outside the key range, which the caller refuses as accountLockKey does.
 */
export function tryLockAccountExpr(importId: RawBuilder<unknown>): RawBuilder<boolean | null> {
  return sql<boolean | null>`CASE WHEN (${importId})::int8 BETWEEN 0 AND ${MAX_IMPORT_ID - 1}::int8
    THEN pg_try_advisory_xact_lock((${ACCOUNT_LOCK_SPACE}::int8 << 32) | (${importId})::int8) END`;
}

const LOCK_SPACES = { account: { space: ACCOUNT_LOCK_SPACE, objsubid: 1 }, slot: { space: SLOT_LOCK_SPACE, objsubid: 2 } } as const;

/**
 * The one reading of pg_locks: the locks of one kind held now in this database, by any session of any
 * instance, as a relation with `objid` (the import id of an account lock, the slot number of a slot)
 * to select from or join. pg_locks holds a few hundred rows at most.
 */
export function heldLocks(kind: keyof typeof LOCK_SPACES): RawBuilder<{ objid: number }> {
  const { space, objsubid } = LOCK_SPACES[kind];
  return sql<{ objid: number }>`(SELECT objid FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND objsubid = ${sql.lit(objsubid)}
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND classid = ${space}::int8::oid)`;
}

/**
 * Whether some session holds the account lock of the import process `importId` (an SQL expression,
 * so a query can test it for its own row): a create is running, status IN_PROGRESS.
 */
export function accountLockHeld(importId: RawBuilder<unknown> | number): RawBuilder<boolean> {
  return sql<boolean>`EXISTS (SELECT 1 FROM ${heldLocks('account')} AS l WHERE l.objid = (${importId})::int8::oid)`;
}

/**
 * Takes a free slot of 1..limit (an SQL expression, so the create's read under the row lock takes it
 * in the same round trip): the slot, or NULL when all are taken (by any instance). Each probe is a
 * try-lock, so this never waits; the slot is held until the transaction ends.
 */
export function takeSlotExpr(limit: number): RawBuilder<number | null> {
  return sql<number | null>`(SELECT s FROM generate_series(1, ${limit}::int4) AS s
    WHERE pg_try_advisory_xact_lock(${SLOT_LOCK_SPACE}::int4, s) LIMIT 1)`;
}
