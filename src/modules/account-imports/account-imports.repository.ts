import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { precompiled } from '../../db/precompiled.ts';
import { accountLockHeld, takeSlotExpr, tryLockAccountExpr } from './import-locks.repository.ts';

// The import process rows (account_imports) and the create attempts. Free functions, executor first.
type Db = Kysely<Database>;

export interface ImportState {
  id: number;
  skipped: boolean;
  account_id: number | null;
  service_account_number: string | null;
}

/**
 * Stages in one statement, so concurrent stages of one account never make two rows: the first
 * inserts (inserted = true), a re-stage replaces the data (inserted = false) and keeps staged_at.
 * No row comes back when the account is already imported or marked to skip.
 */
export function upsertStaged(db: Db, supplierId: number, externalAccountNumber: string, data: unknown) {
  return db.insertInto('account_imports')
    .values({ supplier_id: supplierId, external_account_number: externalAccountNumber, data: JSON.stringify(data) })
    .onConflict((oc) => oc.columns(['supplier_id', 'external_account_number'])
      .doUpdateSet({ data: (eb) => eb.ref('excluded.data'), updated_at: sql`now()` })
      .where('account_imports.account_id', 'is', null)
      .where('account_imports.skipped', '=', false))
    // xmax is 0 on a row version this statement inserted, and the updating transaction's id otherwise.
    .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
    .executeTakeFirst();
}

/** A row of a staging group commit (staging-writer.ts): the staged data already as its JSON text. */
export interface StagedRowJson { supplierId: number; externalAccountNumber: string; dataJson: string }

/** What upsertStagedBatch answers for each row it wrote; a row the guard refused is not among them. */
export interface StagedBatchRow { supplier_id: number; external_account_number: string; inserted: boolean }

/**
 * upsertStaged for many rows in ONE statement, built and not yet run: the events module runs it with
 * each written row's `import_process.staged` event in the same statement (stagedBatchEvent), so the
 * rows and their events commit together even when the statement runs alone. The rows travel as ONE
 * jsonb parameter, as transactionsInsert sends its batch; the staged data is spliced into it as the
 * JSON text upsertStaged would send alone, so the stored jsonb is the same value. Rows are written,
 * and their row locks taken, in the order given: the caller sorts them, so that concurrent batches
 * lock shared rows in the same order and cannot deadlock. No (supplier, account) may appear twice:
 * ON CONFLICT DO UPDATE cannot touch one row twice in a statement. A row the guard refused (imported,
 * or marked to skip) is not returned and has no event.
 */
export function upsertStagedBatch(rows: readonly StagedRowJson[]): RawBuilder<StagedBatchRow> {
  return sql<StagedBatchRow>`INSERT INTO account_imports AS ai (supplier_id, external_account_number, data)
      ${stagedRowsOf(rows)}
      ON CONFLICT (supplier_id, external_account_number) DO UPDATE SET data = excluded.data, updated_at = now()
        WHERE ai.account_id IS NULL AND NOT ai.skipped
      RETURNING ai.supplier_id, ai.external_account_number, (xmax = 0) AS inserted`;
}

/**
 * First stages of accounts never staged (a migration job's set of new accounts), in ONE statement
 * inside the caller's transaction: a row whose account is staged already, by anything, is left out
 * (ON CONFLICT DO NOTHING) and not returned, so the caller sees which it did not write. Rows are
 * written in the order given (the caller sorts them, as the staging writer does, against deadlocks).
 */
export function insertFirstStages(rows: readonly StagedRowJson[]): RawBuilder<{ id: number; external_account_number: string }> {
  return sql<{ id: number; external_account_number: string }>`INSERT INTO account_imports (supplier_id, external_account_number, data)
      ${stagedRowsOf(rows)}
      ON CONFLICT (supplier_id, external_account_number) DO NOTHING
      RETURNING id, external_account_number`;
}

/**
 * Staged rows as a SELECT over ONE jsonb parameter: each row's data spliced in as the JSON text
 * upsertStaged would send alone, so the stored jsonb is the same value.
 */
function stagedRowsOf(rows: readonly StagedRowJson[]): RawBuilder<unknown> {
  const param = `[${rows.map((r) => `{"s":${r.supplierId},"e":${JSON.stringify(r.externalAccountNumber)},"d":${r.dataJson}}`).join(',')}]`;
  return sql`SELECT x.s, x.e, x.d FROM jsonb_to_recordset(${param}::jsonb) AS x(s int8, e text, d jsonb)`;
}

/** Which of `externalAccountNumbers` the supplier has staged (or imported, or marked to skip) already. */
export async function findStagedNumbers(db: Db, supplierId: number, externalAccountNumbers: string[]): Promise<Set<string>> {
  if (externalAccountNumbers.length === 0) return new Set();
  const rows = await db.selectFrom('account_imports').select('external_account_number')
    .where('supplier_id', '=', supplierId).where('external_account_number', 'in', externalAccountNumbers).execute();
  return new Set(rows.map((r) => r.external_account_number));
}

/** The event of each row upsertStagedBatch wrote: staged, first_staging when the row was new (over the written row `w`). */
export const stagedBatchEvent = { type: 'import_process.staged', data: sql<unknown>`jsonb_build_object('first_staging', w.inserted)` } as const;

/** The import process of one account with its account number, if created (without the staged data). */
export function findImportState(db: Db, supplierId: number, externalAccountNumber: string): Promise<ImportState | undefined> {
  return db.selectFrom('account_imports as ai')
    .leftJoin('accounts as a', 'a.id', 'ai.account_id')
    .select(['ai.id', 'ai.skipped', 'ai.account_id', 'a.number as service_account_number'])
    .where('ai.supplier_id', '=', supplierId)
    .where('ai.external_account_number', '=', externalAccountNumber)
    .executeTakeFirst();
}

/** What the create reads of its account in its one read (findForCreate). */
export interface StateForCreate extends ImportState {
  /** False: another create holds the account's lock, and nothing below was read. */
  locked: boolean;
  /** The staged data as read under the lock and the row lock; undefined when not locked. */
  data: unknown;
  team_id: number | null;
  slot: number | null;
}

/**
 * The create's one read, inside its transaction: the import process by its key, its account lock
 * tried, and only when the lock was taken, the row read again locked FOR UPDATE (until the
 * transaction ends) with its staged data, the operations team the create names (null: no such team)
 * and, with a `slotLimit`, a concurrency slot taken for the transaction (null: every slot taken; a
 * create that fails for another reason gives it back when it rolls back). Undefined: never staged.
 *
 * The row lock is what makes this read decide, although its snapshot was taken before the account
 * lock: a create that committed in between (or a re-stage, or a mark to skip) updated the row, so
 * locking it finds the newer version and reads that one (READ COMMITTED's recheck), as a second
 * statement would. Only an account linked in between is then missing its number (the account row
 * is not in this snapshot): `service_account_number` is null with `account_id` set, and the caller
 * reads the number (findAccountNumber). The row lock is tried only under the account lock: a create
 * that finds the lock held must answer at once, not wait for the holder's row lock. A re-stage
 * (upsertStaged) that committed before this read is what the create builds from; one that arrives
 * after waits on the row, then finds the account imported (its guard refuses:
 * account_already_imported) or, if the create rolled back, lands. Without the row lock a re-stage
 * could commit between this read and the link to the new account (insertAccountsWithTrees), answer
 * 200, and never be imported. One round trip, where the lock and the read under it were two.
 */
export async function findForCreate(
  trx: Transaction<Database>, supplierId: number, externalAccountNumber: string, teamName: string, slotLimit: number,
): Promise<StateForCreate | undefined> {
  const [row] = slotLimit > 0
    ? await forCreateWithSlot(trx, supplierId, externalAccountNumber, teamName, slotLimit)
    : await forCreateWithoutSlot(trx, supplierId, externalAccountNumber, teamName);
  if (!row) return undefined;
  if (row.locked === null) throw new Error(`import id ${row.id} is outside the advisory key range`);
  return { ...row, locked: row.locked === true, data: row.data ?? undefined };
}

type ForCreateRow = Omit<StateForCreate, 'locked'> & { locked: boolean | null };

// Every create runs one of these: compiled once and prepared (they read by unique keys: the
// (supplier, account number) key, the primary keys, the team's name). `seen` is MATERIALIZED so
// that its lock is tried once, before `held` reads under it.
const forCreate = (qb: Kysely<Database>, supplierId: number, ext: string, teamName: string, slot: RawBuilder<number | null>) => {
  const query = sql<ForCreateRow>`WITH seen AS MATERIALIZED (
      SELECT ai.id, ai.skipped, ai.account_id, ${tryLockAccountExpr(sql.ref('ai.id'))} AS locked
      FROM account_imports ai WHERE ai.supplier_id = ${supplierId} AND ai.external_account_number = ${ext}
    ), held AS (
      SELECT ai.id, ai.skipped, ai.account_id, ai.data FROM seen JOIN account_imports ai ON ai.id = seen.id
      WHERE seen.locked
      FOR UPDATE OF ai
    )
    SELECT seen.id, coalesce(held.skipped, seen.skipped) AS skipped, coalesce(held.account_id, seen.account_id) AS account_id,
      a.number AS service_account_number, seen.locked, held.data,
      CASE WHEN held.id IS NOT NULL THEN (SELECT t.id FROM operations_teams t WHERE t.name = ${teamName}) END AS team_id,
      CASE WHEN held.id IS NOT NULL THEN ${slot} END AS slot
    FROM seen LEFT JOIN held ON true
      LEFT JOIN accounts a ON a.id = coalesce(held.account_id, seen.account_id)`;
  return { compile: () => query.compile(qb) };
};
const forCreateWithSlot = precompiled(4, (qb, supplierId: number, ext: string, teamName: string, slotLimit: number) =>
  forCreate(qb, supplierId, ext, teamName, takeSlotExpr(slotLimit)), { serverPrepared: true });
const forCreateWithoutSlot = precompiled(3, (qb, supplierId: number, ext: string, teamName: string) =>
  forCreate(qb, supplierId, ext, teamName, sql<number | null>`NULL::int4`), { serverPrepared: true });

/** What a create without a transaction reads first (findForCreateAtOnce). */
export interface StagedForCreate extends ImportState { data: unknown; team_id: number | null; version: string }

/**
 * The first read of a create without a transaction of its own (create-account.service.ts): the
 * import process with its staged data, the row version that holds it (`version`, its xmin) and the
 * team the create names (null: no such team), no lock taken. What it read is checked again under
 * the locks by createGate, in the statement that writes the account.
 */
export async function findForCreateAtOnce(db: Db, supplierId: number, externalAccountNumber: string, teamName: string): Promise<StagedForCreate | undefined> {
  return (await stagedAtOnce(db, supplierId, externalAccountNumber, teamName))[0];
}

// Every create runs it: compiled once and prepared (it reads by the (supplier, account number) key, the team by its name).
const stagedAtOnce = precompiled(3, (qb, supplierId: number, ext: string, teamName: string) => {
  const query = sql<StagedForCreate>`SELECT ai.id, ai.skipped, ai.account_id, NULL::text AS service_account_number, ai.data,
      ai.xmin::text AS version, (SELECT t.id FROM operations_teams t WHERE t.name = ${teamName}) AS team_id
    FROM account_imports ai WHERE ai.supplier_id = ${supplierId} AND ai.external_account_number = ${ext}`;
  return { compile: () => query.compile(qb) };
}, { serverPrepared: true });

/**
 * The gate of a create without a transaction (insertAccountsWithTrees' `gate`): a row when, in the
 * statement that writes the account, the import process is still the row version `version` that
 * findForCreateAtOnce read (not imported, not skipped, its data not staged again since), its account
 * lock was taken and, with a `slotLimit`, a concurrency slot. The row is locked FOR UPDATE, so a
 * version committed since the statement began is the one checked (READ COMMITTED's recheck), and a
 * re-stage arriving meanwhile waits for the link. Locks and slot are the statement's: they last
 * until it commits. No row: nothing is written, and the caller creates in a transaction instead,
 * which answers what was in the way in D4's order. The lock is tried last, so that a create whose
 * row changed takes none.
 */
export function createGate(importId: number, version: string, slotLimit: number): RawBuilder<unknown> {
  const locked = sql`SELECT ai.id FROM account_imports ai
      WHERE ai.id = ${importId}::int8 AND ai.xmin = ${version}::xid AND ai.account_id IS NULL AND NOT ai.skipped
        AND ${tryLockAccountExpr(sql.ref('ai.id'))}
      FOR UPDATE OF ai`;
  if (slotLimit <= 0) return locked;
  return sql`WITH locked AS MATERIALIZED (${locked}), slotted AS MATERIALIZED (SELECT locked.id, ${takeSlotExpr(slotLimit)} AS slot FROM locked)
    SELECT id FROM slotted WHERE slot IS NOT NULL`;
}

/** The number of the account `accountId` (committed since the caller's read began, so read anew). */
export async function findAccountNumber(trx: Transaction<Database>, accountId: number): Promise<string> {
  const row = await trx.selectFrom('accounts').select('number').where('id', '=', accountId).executeTakeFirstOrThrow();
  return row.number;
}

/** A concurrency slot taken for the transaction (takeSlotExpr), or null when every one is taken. */
export async function takeSlot(trx: Transaction<Database>, limit: number): Promise<number | null> {
  const { rows } = await sql<{ slot: number | null }>`SELECT ${takeSlotExpr(limit)} AS slot`.execute(trx);
  return rows[0]?.slot ?? null;
}

export interface AttemptRecord {
  supplierId: number;
  externalAccountNumber: string;
  dryRun: boolean;
  startedAt: Date;
  outcome: 'created' | 'dry_run_rolled_back' | 'failed';
  errorCode: string | null;
  errorDetail: string | null;
  /** The dot path of the first error, when the error names a field (grouped on by the stats, D14). */
  errorAttr?: string | null;
  /** That first error's own code (invalid_phone_number under account_failed_validation): the stats group by it. */
  errorFieldCode?: string | null;
}

/** The insert of an attempt's record, built and not yet run: it travels with the attempt's event (events.record). */
export function attemptInsert(trx: Transaction<Database>, attempt: AttemptRecord) {
  return trx.insertInto('create_attempts').values({
    supplier_id: attempt.supplierId,
    external_account_number: attempt.externalAccountNumber,
    dry_run: attempt.dryRun,
    outcome: attempt.outcome,
    error_code: attempt.errorCode,
    error_detail: attempt.errorDetail,
    error_attr: attempt.errorAttr ?? null,
    error_field_code: attempt.errorFieldCode ?? null,
    started_at: attempt.startedAt,
  }).returning('id');
}

/**
 * The `created` attempt of each account of `accounts` (a CTE's name: a statement's rows with
 * supplier_id, external_account_number and acct, the account's place in its set, the order the
 * attempts are written in), as a data-modifying CTE's statement: for the statement that writes the
 * accounts (insertAccountsWithTrees), so that each commits with its account.
 */
export function createdAttemptsInsert(accounts: string, startedAt: Date): RawBuilder<never> {
  return sql<never>`INSERT INTO create_attempts (supplier_id, external_account_number, dry_run, outcome, started_at)
      SELECT w.supplier_id, w.external_account_number, false, 'created', ${startedAt}::timestamptz FROM ${sql.table(accounts)} w ORDER BY w.acct`;
}

/**
 * The data of `import_process.completed` in SQL, over a written account `w` (number, created_at):
 * the account's number and its creation time as utcSeconds writes it (whole seconds, cut, not
 * rounded: to_char cuts too).
 */
export const completedEventData = sql<unknown>`jsonb_build_object('service_account_number', w.number,
  'account_created_at', to_char(w.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))`;

export interface StatusRow {
  service_account_number: string | null;
  in_progress: boolean;
  error_code: string | null;
  error_detail: string | null;
  failed: boolean;
}

/**
 * Everything the status endpoint needs in one round trip: the caller's supplier, the import process,
 * its account, whether a create holds its lock (looked up only while pending) and the latest failed
 * attempt. No row when the supplier is not the caller's or the account was never staged. Compiled
 * once (db/precompiled.ts): migration scripts poll this endpoint.
 */
const statusQuery = precompiled(3, (qb, organisationId: number, code: string, externalAccountNumber: string) =>
  qb.selectFrom('import_suppliers as s')
    .innerJoin('account_imports as ai', (join) => join.onRef('ai.supplier_id', '=', 's.id')
      .on('ai.external_account_number', '=', externalAccountNumber))
    .leftJoin('accounts as a', 'a.id', 'ai.account_id')
    .leftJoinLateral((eb) => eb.selectFrom('create_attempts as ca')
      .select(['ca.error_code', 'ca.error_detail'])
      .whereRef('ca.supplier_id', '=', 's.id')
      .where('ca.external_account_number', '=', externalAccountNumber)
      .where('ca.outcome', '=', 'failed')
      .orderBy('ca.id', 'desc').limit(1).as('la'), (join) => join.onTrue())
    .select([
      'a.number as service_account_number', 'la.error_code', 'la.error_detail',
      sql<boolean>`la.error_code IS NOT NULL OR la.error_detail IS NOT NULL`.as('failed'),
      sql<boolean>`CASE WHEN a.id IS NULL THEN ${accountLockHeld(sql.ref('ai.id'))} ELSE false END`.as('in_progress'),
    ])
    .where('s.code', '=', code)
    .where('s.organisation_id', '=', organisationId));

export async function findStatusRow(db: Db, organisationId: number, code: string, externalAccountNumber: string): Promise<StatusRow | undefined> {
  return (await statusQuery(db, organisationId, code, externalAccountNumber))[0];
}
