import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { requireCallerSupplier } from '../../core/suppliers.ts';
import { documentPathsOf, type Note } from '../account-data/index.ts';
import { lockImportedAccount, type ImportDeps } from '../imported-accounts/index.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import type { Caller } from '../../core/caller.ts';
import type { CreateNotesBody, CreateNotesResponse } from './notes.schemas.ts';
import { findNotesWithBodies, notesInsert, type NoteRow, type StoredNote } from './notes.repository.ts';

/**
 * Imports notes onto an account (spec 4.4, D8). A note is created only when the account has no note
 * with the same body (and the same created_at, when one is sent). A note of documents only (no body,
 * or a blank one) repeats a note without body that has the same set of document paths. The notes are
 * handled in order in one database transaction holding the account row, so a repeat within the
 * request, or in a concurrent identical request, finds the first one.
 */
async function importNotes({ db, events, clock }: ImportDeps, caller: Caller, body: CreateNotesBody): Promise<CreateNotesResponse> {
  const supplier = await requireCallerSupplier(caller, body.import_supplier, 'import_supplier');
  const now = new Date(Math.floor(clock.nowMs() / 1000) * 1000);
  return db.transaction().execute(async (trx) => {
    const account = await lockImportedAccount(trx, supplier.id, body.external_account_number);
    // Every note the batch could repeat, in one query; then the batch is matched in memory, against
    // the stored notes and its own earlier items, and written in one insert.
    const bodies = [...new Set(body.notes.map((note) => toNoteValues(note).body ?? ''))];
    const known = await findNotesWithBodies(trx, account.id, bodies);
    const { results, fresh } = matchNotes(known, body.notes, now);
    await events.record(trx, [{
      supplierId: supplier.id, type: 'post_import.completed', externalAccountNumber: body.external_account_number,
      data: { kind: 'notes', added: fresh.length, already_existing: body.notes.length - fresh.length },
    }], fresh.length > 0 ? notesInsert(trx, account.id, fresh) : null);
    return results;
  });
}

/**
 * The notes of a batch matched, in order, against the account's notes that it could repeat (`known`)
 * and its own earlier items: each note's result, and the new notes to write (created now when sent
 * without created_at). Pure: the import runs it under the account's lock, and a migration job's set
 * of new accounts runs it over nothing stored.
 */
export function matchNotes(known: StoredNote[], notes: Note[], now: Date): { results: CreateNotesResponse; fresh: NoteRow[] } {
  const seen = [...known];
  const fresh: NoteRow[] = [];
  const results: CreateNotesResponse = notes.map((note) => {
    const w = toNoteValues(note);
    const same = seen.find((k) => repeats(k, w));
    if (same) return { created_at: utcSeconds(same.createdAt), body: w.body, status: 'NOTE_ALREADY_EXISTS' as const };
    const createdAt = w.createdAt ?? now;
    fresh.push({ ...w, createdAt, isPinned: note.is_pinned ?? false, unpinAt: note.unpin_at ? new Date(note.unpin_at) : null });
    seen.push({ body: w.body, documentPaths: w.documentPaths, createdAt });
    return { created_at: utcSeconds(createdAt), body: w.body, status: 'NOTE_CREATION_SUCCESS' as const };
  });
  return { results, fresh };
}

/**
 * The notes an account was created with (its data's `notes`), as they are stored and as matchNotes
 * compares them: a set-based write, which has not read them back, matches a record's notes against
 * them as the notes import would against the stored rows. A note created without a time has the
 * moment of creation, `createdAt`.
 */
export function notesAsCreated(notes: readonly Note[], createdAt: Date): StoredNote[] {
  return notes.map((note) => ({
    body: note.body ?? null,
    documentPaths: documentPathsOf(note),
    createdAt: note.created_at ? new Date(note.created_at) : createdAt,
  }));
}

/**
 * D8: a note repeats one with the same body (and the same created_at when one was sent). A note
 * without a body repeats one with no body and the same set of document paths.
 */
function repeats(stored: StoredNote, note: { body: string | null; documentPaths: string[]; createdAt: Date | null }): boolean {
  if (note.createdAt && stored.createdAt.getTime() !== note.createdAt.getTime()) return false;
  if (note.body !== null) return stored.body === note.body;
  if (stored.body !== null) return false;
  const a = new Set(stored.documentPaths);
  const b = new Set(note.documentPaths);
  return a.size === b.size && [...a].every((path) => b.has(path));
}

function toNoteValues(note: Note): { body: string | null; documentPaths: string[]; createdAt: Date | null } {
  return {
    body: note.body !== undefined && note.body.trim() !== '' ? note.body : null,
    documentPaths: documentPathsOf(note),
    createdAt: note.created_at ? new Date(note.created_at) : null,
  };
}

/** The notes module as the composition root builds it (composition.ts). */
export interface Notes {
  /** POST notes/create/: the notes that are new added, each result in order. */
  import(caller: Caller, body: CreateNotesBody): Promise<CreateNotesResponse>;
  /** The same module over another handle of the store (a rehearsal's). */
  on(db: Kysely<Database>): Notes;
}

export function createNotes(deps: ImportDeps): Notes {
  return { import: (caller, body) => importNotes(deps, caller, body), on: (db) => createNotes({ ...deps, db }) };
}
