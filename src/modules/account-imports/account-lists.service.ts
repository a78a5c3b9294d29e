import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../core/errors.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import type { Caller } from '../../core/caller.ts';
import type { ImportRecord } from './account-imports.schemas.ts';
import { listPage, type ListKind, type ListPosition, type ListRow } from './account-lists.repository.ts';

// The three lists (spec 4.9–4.11, D7). Without page_size the whole list is produced as JSON text in
// chunks read by keyset, so memory stays bounded whatever the list's size; with page_size one page
// comes back with the cursor of the next.

export const STREAM_CHUNK_ROWS = 1000;

/** An unknown supplier and another organisation's look the same (D3). */
async function supplierIdOf(db: Kysely<Database>, caller: Caller, code: string): Promise<number> {
  const supplier = await caller.findSupplier(code);
  if (!supplier) throw new AppError('not_found', `No import supplier with code "${code}".`);
  return supplier.id;
}

function toRecord(row: ListRow): ImportRecord {
  const record: ImportRecord = {
    external_account_number: row.external_account_number,
    service_account_number: row.service_account_number,
    account_created_at: row.account_created_at ? utcSeconds(row.account_created_at) : null,
  };
  if (row.last_error_code !== undefined) {
    record.last_error = { code: row.last_error_code ?? 'internal_error', attr: row.last_error_attr || null, detail: row.last_error_detail ?? '' };
  }
  return record;
}

const positionOf = (row: ListRow): ListPosition => ({ stagedAt: row.staged_key, ext: row.external_account_number });

/**
 * The whole list as JSON text chunks. The first chunk is read before this returns, so an error there
 * is still an ordinary error answer; later chunks are read as the client consumes the stream.
 */
export async function streamImportList(
  db: Kysely<Database>, caller: Caller, code: string, kind: ListKind, failedOnly = false,
): Promise<AsyncIterable<string>> {
  const supplierId = await supplierIdOf(db, caller, code);
  const first = await listPage(db, supplierId, kind, null, STREAM_CHUNK_ROWS, failedOnly);
  return (async function* chunks() {
    let rows = first;
    let prefix = '[';
    while (rows.length > 0) {
      yield prefix + rows.map((row) => JSON.stringify(toRecord(row))).join(',');
      prefix = ',';
      if (rows.length < STREAM_CHUNK_ROWS) break;
      rows = await listPage(db, supplierId, kind, positionOf(rows[rows.length - 1]!), STREAM_CHUNK_ROWS, failedOnly);
    }
    yield prefix === '[' ? '[]' : ']';
  })();
}

export interface ImportListPage { records: ImportRecord[]; nextCursor: string | null }

export async function importListPage(
  db: Kysely<Database>, caller: Caller, code: string, kind: ListKind, pageSize: number, cursor: string | undefined, failedOnly = false,
): Promise<ImportListPage> {
  const after = cursor === undefined ? null : decodeCursor(cursor);
  const supplierId = await supplierIdOf(db, caller, code);
  const rows = await listPage(db, supplierId, kind, after, pageSize + 1, failedOnly);
  const page = rows.slice(0, pageSize);
  return {
    records: page.map(toRecord),
    nextCursor: rows.length > pageSize ? encodeCursor(positionOf(page[page.length - 1]!)) : null,
  };
}

// The cursor is opaque to clients: base64url of the last row's position.
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify([position.stagedAt, position.ext])).toString('base64url');
}

const STAGED_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function decodeCursor(cursor: string): ListPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string'
    && STAGED_KEY.test(value[0]) && !Number.isNaN(Date.parse(value[0]))) {
    return { stagedAt: value[0], ext: value[1] };
  }
  throw AppError.field('invalid', 'This cursor is not one the service gave; use the Link header of the previous page.', 'cursor');
}
