import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../core/errors.ts';
import { badCursor, cursorKey, encodeCursor } from '../../core/cursor.ts';
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
  const after = cursor === undefined ? null : decodeListCursor(cursor);
  const supplierId = await supplierIdOf(db, caller, code);
  const rows = await listPage(db, supplierId, kind, after, pageSize + 1, failedOnly);
  const page = rows.slice(0, pageSize);
  return {
    records: page.map(toRecord),
    nextCursor: rows.length > pageSize ? encodeListCursor(positionOf(page[page.length - 1]!)) : null,
  };
}

export function encodeListCursor(position: ListPosition): string {
  return encodeCursor([position.stagedAt, position.ext]);
}

const STAGED_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function decodeListCursor(cursor: string): ListPosition {
  const [stagedAt, ext] = cursorKey(cursor, 2);
  if (typeof stagedAt === 'string' && typeof ext === 'string' && STAGED_KEY.test(stagedAt) && !Number.isNaN(Date.parse(stagedAt))) {
    return { stagedAt, ext };
  }
  throw badCursor();
}
