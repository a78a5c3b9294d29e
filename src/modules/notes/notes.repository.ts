import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

type Trx = Transaction<Database>;

export interface NoteRow {
  body: string | null;
  documentPaths: string[];
  createdAt: Date;
  isPinned: boolean;
  unpinAt: Date | null;
}

/**
 * A note on the account that makes `note` a repeat (D8): the same body (and the same created_at when
 * one was sent). A note without a body repeats one with no body and the same set of document paths.
 */
export function findSameNote(trx: Trx, accountId: number, note: { body: string | null; documentPaths: string[]; createdAt: Date | null }) {
  let query = trx.selectFrom('notes').select('created_at').where('account_id', '=', accountId)
    // The expression of notes_account_body_idx, so a long note history is not scanned.
    .where(sql<string>`md5(coalesce(body, ''))`, '=', sql<string>`md5(${note.body ?? ''}::text)`);
  if (note.body !== null) {
    query = query.where('body', '=', note.body);
  } else {
    const paths = JSON.stringify(note.documentPaths);
    query = query.where('body', 'is', null)
      .where(sql<boolean>`document_paths @> ${paths}::jsonb and document_paths <@ ${paths}::jsonb`);
  }
  if (note.createdAt) query = query.where('created_at', '=', note.createdAt);
  return query.limit(1).executeTakeFirst();
}

export function insertNote(trx: Trx, accountId: number, note: NoteRow) {
  return trx.insertInto('notes').values({
    account_id: accountId,
    body: note.body,
    document_paths: JSON.stringify(note.documentPaths),
    created_at: note.createdAt,
    is_pinned: note.isPinned,
    unpin_at: note.unpinAt,
  }).returning(['id', 'created_at']).executeTakeFirstOrThrow();
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
