import { INEXACT_NUMBER_DETAIL, inexactNumbersOf, recordInexactNumbers } from '../../core/json-numbers.ts';
import { forbiddenKeyDetail, holdsForbiddenKey } from '../../core/forbidden-keys.ts';
import { findUnstorableText, recordStorableText } from '../../core/unstorable-text.ts';
import { ExternalAccountNumber } from '../../schemas/identifiers.ts';
import type { RecordError } from './migration-jobs.schemas.ts';
import type { Line } from './ndjson-lines.ts';

// One uploaded line read into a record, or into the errors that make it a failed record at step
// parse. Whatever a line holds, it ends as one row: a line the store could not keep (a NUL, a lone
// surrogate, nesting jsonb refuses) would otherwise fail the whole batch of lines written with it,
// and fail again at every resumed upload.

/**
 * Levels of nesting a record line may have (the record object is level 1; arrays count). Far above
 * what D11's records need (a metadata value, itself at most 32 levels, sits at level 5), far below
 * what the store or a recursive walk could not take.
 */
export const MAX_RECORD_DEPTH = 64;

/** The keys a record may have; any other is unknown_field at upload. */
export const RECORD_KEYS = ['account', 'statements', 'transactions', 'notes', 'payment_instruction'] as const;

/** An electricity supply point the record's account names: its identifier and where it is in the record. */
export interface NamedPoint { identifier: string; attr: string }

/** `points`: the account's electricity identifiers, each once (the first place it appears), for the within-file check. */
export interface ParsedLine { ext: string | null; record: unknown; errors: RecordError[]; points: NamedPoint[] }

const parseFailure = (detail: string): ParsedLine => ({ ext: null, record: null, errors: [{ code: 'parse_error', attr: 'non_field_errors', detail }], points: [] });

export function parseLine(line: Line): ParsedLine {
  if (line.kind === 'too_long') {
    return { ext: null, record: null, errors: [{ code: 'payload_too_large', attr: 'non_field_errors', detail: `The line is ${line.bytes} bytes; a record is at most ${line.limit} bytes (BODY_LIMIT_BYTES).` }], points: [] };
  }
  if (line.kind === 'not_utf8') return parseFailure('The line is not valid UTF-8.');
  let value: unknown;
  try {
    value = JSON.parse(line.text);
  } catch {
    return parseFailure('The line is not valid JSON.');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return parseFailure('The line is not a JSON object.');
  if (nestsDeeperThan(line.text, value, MAX_RECORD_DEPTH)) return parseFailure(`The line is nested more than ${MAX_RECORD_DEPTH} levels deep.`);
  if (holdsForbiddenKey(line.text, value)) return parseFailure(forbiddenKeyDetail('line'));
  const account = (value as Record<string, unknown>).account;
  const named = typeof account === 'object' && account !== null ? (account as Record<string, unknown>).external_account_number : undefined;
  // The number is stored in a column of its own, under a unique index: only when it could be an
  // account number at all (at most its 100 characters, text the store can keep). An index entry
  // over about 2,700 bytes is refused by PostgreSQL; the account step refuses such a number anyway.
  const ext = typeof named === 'string' && named.length <= ExternalAccountNumber.maxLength! && findUnstorableText(named).length === 0 ? named : null;
  // Checked on the parsed value, not the text: `\\u0000` in the text is a backslash, not NUL.
  recordStorableText(line.text, value);
  const unstorable = findUnstorableText(value);
  if (unstorable.length > 0) return { ext, record: null, errors: [...unstorable], points: [] };
  // A number the parse changed (1e309, 20 digits) fails here: only the parsed value is stored, and
  // the steps' validation no longer sees the text (json-numbers.ts).
  recordInexactNumbers(line.text, value);
  const inexact = [...(inexactNumbersOf(value)?.keys() ?? [])];
  if (inexact.length > 0) {
    return { ext, record: null, errors: inexact.map((attr) => ({ code: 'invalid', attr, detail: INEXACT_NUMBER_DETAIL })), points: [] };
  }
  // The record's own shape: `account` required, no other keys than D11's. Each part's contents are
  // checked by its step, with its endpoint's schema.
  const unknown = Object.keys(value).filter((key) => !(RECORD_KEYS as readonly string[]).includes(key));
  const errors: RecordError[] = unknown.map((key) => ({ code: 'unknown_field', attr: key, detail: 'This field is not part of the documented payload and must not be sent.' }));
  if (account === undefined) errors.unshift({ code: 'required', attr: 'account', detail: 'This field is required.' });
  else if (typeof account !== 'object' || account === null || Array.isArray(account)) {
    errors.unshift({ code: 'invalid', attr: 'account', detail: 'Expected an object.' });
  }
  if (errors.length > 0) return { ext, record: null, errors, points: [] };
  return { ext, record: value, errors, points: electricityPoints(account as Record<string, unknown>) };
}

/**
 * The electricity identifiers of an account as sent (the ones the store keeps one account each), read
 * defensively: the account step validates the shape. Only identifiers the store could index.
 */
function electricityPoints(account: Record<string, unknown>): NamedPoint[] {
  const points: NamedPoint[] = [];
  const seen = new Set<string>();
  const addresses = Array.isArray(account.supply_addresses) ? account.supply_addresses as unknown[] : [];
  addresses.forEach((address, i) => {
    const list = isObject(address) && Array.isArray(address.supply_points) ? address.supply_points as unknown[] : [];
    list.forEach((point, j) => {
      if (!isObject(point) || point.supply_type !== 'ELECTRICITY') return;
      const identifier = point.identifier;
      if (typeof identifier !== 'string' || identifier === '' || identifier.length > MAX_INDEXED_IDENTIFIER || seen.has(identifier)) return;
      seen.add(identifier);
      points.push({ identifier, attr: `account.supply_addresses.${i}.supply_points.${j}.identifier` });
    });
  });
  return points;
}

/** Longer identifiers are refused by the account's own rules (100 characters); the index keeps text it can hold. */
const MAX_INDEXED_IDENTIFIER = 500;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Whether `value` (parsed from `text`) nests more than `max` levels. A document cannot be deeper than
 * the brackets in its text, so most lines are cleared by counting them; the rest are walked
 * iteratively, stopping at the bound.
 */
function nestsDeeperThan(text: string, value: unknown, max: number): boolean {
  let openers = 0;
  for (const bracket of ['{', '[']) {
    for (let at = text.indexOf(bracket); at !== -1 && openers <= max; at = text.indexOf(bracket, at + 1)) openers += 1;
  }
  if (openers <= max) return false;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > max) return true;
    const children = Array.isArray(item) ? item : Object.values(item);
    for (let i = 0; i < children.length; i += 1) stack.push([children[i], depth + 1]);
  }
  return false;
}
