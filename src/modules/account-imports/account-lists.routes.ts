import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import { answer, LINK_NEXT, refusal } from '../../http/openapi.ts';
import type { StoreDeps } from '../../http/route-deps.ts';
import { SupplierPathParams } from '../../schemas/identifiers.ts';
import { FilteredListQuery, ImportRecordList, ListQuery } from './account-imports.schemas.ts';
import { BAD_CURSOR, IMPORT_RECORDS, UNKNOWN_SUPPLIER } from './account-imports.examples.ts';
import type { ListKind } from './account-lists.repository.ts';
import { importListPage, streamImportList } from './account-lists.service.ts';

const LISTS: Array<{ kind: ListKind; path: string; operationId: string; summary: string }> = [
  { kind: 'all', path: '/all-account-import-processes/:import_supplier_code/', operationId: 'listAccountImports', summary: 'Every pending and imported account of the supplier' },
  { kind: 'pending', path: '/pending-account-import-processes/:import_supplier_code/', operationId: 'listPendingAccountImports', summary: 'Accounts staged and not yet created' },
  { kind: 'imported', path: '/imported-account-import-processes/:import_supplier_code/', operationId: 'listImportedAccountImports', summary: 'Accounts created' },
];

// The lists (spec 4.9–4.11, D7). Without page_size the whole array is streamed; with it, one page and
// a `Link: <…>; rel="next"` header while more remain.
export const accountListsRoutes: FastifyPluginAsync<StoreDeps> = async (plugin, { db }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  for (const list of LISTS) {
    // The failures filter (D14) on the all and pending lists; the imported list has no failures.
    const filtered = list.kind !== 'imported';
    app.get(list.path, {
      schema: {
        tags: ['Account import'],
        operationId: list.operationId,
        summary: list.summary,
        description: 'Records ordered by staging time, then external account number; service_account_number and '
          + 'account_created_at are null while pending. Optional keyset paging: `?page_size=N` (1-1000), then follow the '
          + '`Link` header (`cursor`).'
          + (filtered ? ' `?state=failed`: only staged accounts whose latest create attempt failed, each with `last_error`.' : ''),
        params: SupplierPathParams,
        querystring: filtered ? FilteredListQuery : ListQuery,
        response: {
          200: answer(ImportRecordList, 'The accounts, in order; without `page_size`, all of them in one streamed array.',
            list.kind === 'imported' ? IMPORT_RECORDS.slice(0, 1) : list.kind === 'pending' ? IMPORT_RECORDS.slice(1) : IMPORT_RECORDS,
            { Link: LINK_NEXT }),
          400: refusal(['invalid'], BAD_CURSOR, { note: 'A query parameter is out of its bounds, or the cursor is not one the service gave.' }),
          404: refusal(['not_found'], UNKNOWN_SUPPLIER, { note: 'No such import supplier for the caller\'s organisation.' }),
        },
      },
    }, async (request, reply) => {
      const caller = callerOf(request);
      const code = request.params.import_supplier_code;
      const { page_size: pageSize, cursor } = request.query;
      const failedOnly = 'state' in request.query && request.query.state === 'failed';
      if (pageSize === undefined && cursor === undefined) {
        const chunks = await streamImportList(db, caller, code, list.kind, failedOnly);
        return reply.type('application/json; charset=utf-8').send(Readable.from(chunks));
      }
      const size = pageSize ?? 1000;
      const page = await importListPage(db, caller, code, list.kind, size, cursor, failedOnly);
      if (page.nextCursor) {
        const path = request.url.split('?')[0];
        void reply.header('link', `<${path}?page_size=${size}${failedOnly ? '&state=failed' : ''}&cursor=${page.nextCursor}>; rel="next"`);
      }
      return page.records;
    });
  }
};
