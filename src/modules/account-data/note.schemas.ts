import { Type, type Static } from '@sinclair/typebox';
import { NO_FINDINGS, ruleOf, type RuleCheck, type RuleFinding } from '../../core/rules.ts';
import { UtcDateTime } from '../../schemas/dates.ts';
import { Nullable, Text } from '../../schemas/text.ts';
import { BOUNDS, FIELD_RULES } from './field-checks.ts';

// The note of spec 2.4, shared by the account data (`notes`) and the notes endpoint (4.4).

/**
 * A path relative to the supplier's documents root (D8): no leading `/`, no `..`, no empty segment,
 * no backslash, no control character (`invalid_document_path`). Reused by statements (`statement_path`).
 */
export const DocumentPath = Type.String({
  minLength: 1, maxLength: BOUNDS.documentPath, ...ruleOf(FIELD_RULES, 'document-path'),
  description: 'Path relative to the supplier\'s documents root, for example "notes/2023/letter.pdf": no leading "/", no "..", no empty segment, no "\\" (`invalid_document_path`).',
});

export const NoteDocument = Type.Object({
  document_path: DocumentPath,
}, { additionalProperties: false });
export type NoteDocument = Static<typeof NoteDocument>;

export const NOTE_LIMITS = { body: 10_000, documentPaths: 20 } as const;

const NOTE_RULES = { note: checkNote } satisfies Record<string, RuleCheck>;

export const Note = Type.Object({
  body: Type.Optional(Text(NOTE_LIMITS.body, { description: 'Note text. A note needs a body or at least one document path.' })),
  document_paths: Type.Optional(Type.Array(NoteDocument, { maxItems: NOTE_LIMITS.documentPaths })),
  created_at: Type.Optional(UtcDateTime),
  is_pinned: Type.Optional(Type.Boolean({ description: 'Pins the note to the top of the account\'s support page.' })),
  unpin_at: Type.Optional(Nullable(UtcDateTime, 'UTC datetime at which the pin ends; only with `is_pinned: true`.')),
}, {
  $id: 'Note',
  additionalProperties: false,
  ...ruleOf(NOTE_RULES, 'note'),
  description: 'A note on the account. It needs a non-blank body or at least one document path (`required` at the note). `created_at` defaults to the current UTC time.',
});
export type Note = Static<typeof Note>;

/** A note's document paths as they are stored: the plain list of paths (the notes import compares them as a set). */
export function documentPathsOf(note: Note): string[] {
  return (note.document_paths ?? []).map((d) => d.document_path);
}

/** Cross-field rules of one note; `value` may be of any shape (the schema reports that). */
function checkNote(value: unknown): readonly RuleFinding[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return NO_FINDINGS;
  const note = value as Record<string, unknown>;
  const hasBody = note.body !== undefined && note.body !== null && !(typeof note.body === 'string' && note.body.trim() === '');
  const docs = note.document_paths;
  const hasDocuments = docs !== undefined && docs !== null && !(Array.isArray(docs) && docs.length === 0);
  const needsContent = !hasBody && !hasDocuments;
  const strayUnpin = note.unpin_at !== undefined && note.unpin_at !== null && note.is_pinned !== true;
  if (!needsContent && !strayUnpin) return NO_FINDINGS;
  const found: RuleFinding[] = [];
  if (needsContent) found.push({ path: '', code: 'required', detail: 'A note needs a body or at least one document path.' });
  if (strayUnpin) found.push({ path: 'unpin_at', code: 'invalid', detail: 'unpin_at may only be given with is_pinned: true.' });
  return found;
}
