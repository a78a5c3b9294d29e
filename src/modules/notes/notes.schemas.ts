import { Type, type Static } from '@sinclair/typebox';
import { Choice } from '../../schemas/choice.ts';
import { ExternalAccountNumber, ImportSupplierCode } from '../../schemas/identifiers.ts';
import { Nullable } from '../../schemas/text.ts';
import { Note } from '../account-data/index.ts';

// Import notes (spec 4.4, D8). The note item itself is the one of the account data (spec 2.4).

export const NOTE_STATUSES = ['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS'] as const;
export const MAX_NOTES_PER_REQUEST = 500;

export const CreateNotesBody = Type.Object({
  import_supplier: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
  notes: Type.Array(Note, { minItems: 1, maxItems: MAX_NOTES_PER_REQUEST }),
}, { $id: 'ImportNotesRequest', additionalProperties: false });
export type CreateNotesBody = Static<typeof CreateNotesBody>;

export const NoteResult = Type.Object({
  created_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ: the stored note\'s (the earlier one when it already existed)' }),
  body: Nullable(Type.String(), 'null for a note of documents only'),
  status: Choice(NOTE_STATUSES),
}, { $id: 'NoteResult' });
export type NoteResult = Static<typeof NoteResult>;

export const CreateNotesResponse = Type.Array(NoteResult, { description: 'One result per posted note, in the order posted.' });
export type CreateNotesResponse = Static<typeof CreateNotesResponse>;
