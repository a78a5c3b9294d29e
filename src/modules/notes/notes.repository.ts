import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { precompiled } from '../../db/precompiled.ts';

type Trx = Transaction<Database>;

export interface NoteRow {
  body: string | null;
  documentPaths: string[];
  /** Null: the transaction's time. */
  createdAt: Date | null;
  isPinned: boolean;
  unpinAt: Date | null;
}

export interface StoredNote { body: string | null; documentPaths: string[]; createdAt: Date }

/**
 * The account's notes whose body is one of `bodies` ('' stands for no body): every note a batch could
 * repeat (D8), in one query through the expression of notes_account_body_idx.
 */
export async function findNotesWithBodies(trx: Trx, accountId: number, bodies: string[]): Promise<StoredNote[]> {
  if (bodies.length === 0) return [];
  const rows = await notesWithBodies(trx, accountId, JSON.stringify(bodies));
  return rows.map((r) => ({ body: r.body, documentPaths: r.document_paths as string[], createdAt: r.created_at }));
}

const notesWithBodies = precompiled(2, (qb, accountId: number, bodiesJson: string) => qb.selectFrom('notes')
  .select(['body', 'document_paths', 'created_at'])
  .where('account_id', '=', accountId)
  .where(sql<string>`md5(coalesce(body, ''))`, 'in', sql<string>`(SELECT md5(b) FROM jsonb_array_elements_text(${bodiesJson}::jsonb) AS b)`),
{ serverPrepared: true });

/** One multi-row insert for the notes of a request, of a created account, or of a forced batch. */
export async function insertNotes(trx: Trx, accountId: number, notes: NoteRow[]): Promise<void> {
  if (notes.length === 0) return;
  await notesInsert(trx, accountId, notes).execute();
}

/** insertNotes' statement, built and not yet run (to travel with an import's event); `notes` is not empty. */
export function notesInsert(trx: Trx, accountId: number, notes: NoteRow[]) {
  return notesInsertMany(trx, notes.map((note) => ({ ...note, accountId })));
}

/** notesInsert for the notes of many accounts (a migration job's set of new accounts), each naming its account. */
export function notesInsertMany(trx: Trx, notes: Array<NoteRow & { accountId: number }>) {
  return trx.insertInto('notes').values(notes.map((note) => ({
    account_id: note.accountId,
    body: note.body,
    document_paths: JSON.stringify(note.documentPaths),
    created_at: note.createdAt ?? sql<Date>`now()`,
    is_pinned: note.isPinned,
    unpin_at: note.unpinAt,
  }))).returning('id');
}

export async function countNotes(db: Kysely<Database>, accountId: number): Promise<number> {
  const row = await db.selectFrom('notes').select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Notes pinned now: pinned, and either never unpinned or unpinned only in the future. */
export function findPinnedNotes(db: Kysely<Database>, accountId: number) {
  return db.selectFrom('notes').select(['body', 'document_paths', 'created_at', 'unpin_at'])
    .where('account_id', '=', accountId).where('is_pinned', '=', true)
    .where((eb) => eb.or([eb('unpin_at', 'is', null), eb('unpin_at', '>', sql<Date>`now()`)]))
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(100)
    .execute();
}
