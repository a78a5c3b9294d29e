import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { requireCallerSupplier } from '../../http/auth.ts';
import type { Note } from '../account-data/note.schemas.ts';
import { lockImportedAccount } from '../accounts/imported-account.ts';
import { utcSeconds } from '../../http/wire.schemas.ts';
import type { Caller } from '../auth/token.service.ts';
import type { CreateNotesBody, CreateNotesResponse } from './notes.schemas.ts';
import { findSameNote, insertNote } from './notes.repository.ts';

/**
 * Imports notes onto an account (spec 4.4, D8). A note is created only when the account has no note
 * with the same body (and the same created_at, when one is sent). A note of documents only (no body,
 * or a blank one) repeats a note without body that has the same set of document paths. The notes are
 * handled in order in one database transaction holding the account row, so a repeat within the
 * request, or in a concurrent identical request, finds the first one.
 */
export async function importNotes(db: Kysely<Database>, caller: Caller, body: CreateNotesBody): Promise<CreateNotesResponse> {
  const supplier = await requireCallerSupplier(db, caller, body.import_supplier, 'import_supplier');
  // One clock reading per request: the default created_at of every note in it (D5: UTC).
  const now = new Date(Math.floor(Date.now() / 1000) * 1000);
  return db.transaction().execute(async (trx) => {
    const account = await lockImportedAccount(trx, supplier.id, body.external_account_number);
    const results: CreateNotesResponse = [];
    for (const note of body.notes) {
      const wanted = toNoteValues(note);
      const same = await findSameNote(trx, account.id, wanted);
      if (same) {
        results.push({ created_at: utcSeconds(same.created_at), body: wanted.body, status: 'NOTE_ALREADY_EXISTS' });
        continue;
      }
      const created = await insertNote(trx, account.id, {
        ...wanted, createdAt: wanted.createdAt ?? now, isPinned: note.is_pinned ?? false,
        unpinAt: note.unpin_at ? new Date(note.unpin_at) : null,
      });
      results.push({ created_at: utcSeconds(created.created_at), body: wanted.body, status: 'NOTE_CREATION_SUCCESS' });
    }
    return results;
  });
}

function toNoteValues(note: Note): { body: string | null; documentPaths: string[]; createdAt: Date | null } {
  return {
    body: note.body !== undefined && note.body.trim() !== '' ? note.body : null,
    documentPaths: (note.document_paths ?? []).map((d) => d.document_path),
    createdAt: note.created_at ? new Date(note.created_at) : null,
  };
}
