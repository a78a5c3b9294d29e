import { Type, type Static } from '@sinclair/typebox';
import { Choice } from '../../schemas/choice.ts';
import { ExternalAccountNumber, ImportSupplierCode } from '../../schemas/identifiers.ts';
import { Nullable, RequiredText } from '../../schemas/text.ts';

// Wire shapes of staging, creating, the status endpoint and the lists (spec 4.2, 4.3, 4.8–4.11).

export const StageAccountResponse = Type.Object({
  import_supplier: Type.String(),
  external_account_number: Type.String(),
}, { $id: 'StagedAccount', description: 'The account whose data is staged.' });
export type StageAccountResponse = Static<typeof StageAccountResponse>;

export const ProcessAccountBody = Type.Object({
  external_account_number: ExternalAccountNumber,
  import_supplier_code: ImportSupplierCode,
  operations_team_name: RequiredText(200, { description: 'An existing operations team; the account is linked to it.' }),
  dry_run: Type.Optional(Type.Boolean({ description: 'Run the whole create and roll it back: 400 dry_run_rolled_back when it would succeed.' })),
}, { $id: 'CreateAccountRequest', additionalProperties: false, description: 'Which staged account to create, and for which operations team.' });
export type ProcessAccountBody = Static<typeof ProcessAccountBody>;

export const ProcessAccountResponse = Type.Object({
  service_account_number: Type.String({ description: 'The new account\'s number: `A-` and 8 characters of 0-9A-Z.' }),
}, { $id: 'CreatedAccount' });
export type ProcessAccountResponse = Static<typeof ProcessAccountResponse>;

export const IMPORT_STATUSES = ['UNKNOWN', 'IN_PROGRESS', 'COMPLETED'] as const;

export const AccountStatusResponse = Type.Object({
  status: Choice(IMPORT_STATUSES),
  service_account_number: Type.String({ description: 'Empty while no account exists.' }),
  last_error: Nullable(Type.Object({ code: Type.String(), detail: Type.String() }, {
    description: 'The latest failed create attempt while the account is not imported; null when none failed, and once it is imported.',
  })),
}, { $id: 'AccountStatus' });
export type AccountStatusResponse = Static<typeof AccountStatusResponse>;

export const MAX_PAGE_SIZE = 1000;

export const ListQuery = Type.Object({
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, format: 'int32', description: 'Page by keyset; without it the whole list is streamed.' })),
  cursor: Type.Optional(Type.String({ maxLength: 500, description: 'The cursor of the next page, from the Link header.' })),
}, { additionalProperties: false });
export type ListQuery = Static<typeof ListQuery>;

// The failures filter (D14) of the all and pending lists: only staged accounts whose latest create
// attempt failed, each with that attempt's error.
export const LIST_STATES = ['failed'] as const;
export const FilteredListQuery = Type.Object({
  ...ListQuery.properties,
  state: Type.Optional(Choice(LIST_STATES,
    '`failed`: only staged accounts (not imported, not skipped) whose latest create attempt failed, each with `last_error`.')),
}, { additionalProperties: false });
export type FilteredListQuery = Static<typeof FilteredListQuery>;

export const ImportRecord = Type.Object({
  external_account_number: Type.String(),
  service_account_number: Nullable(Type.String({ description: 'Null while pending.' })),
  account_created_at: Nullable(Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ; null while pending.' })),
  last_error: Type.Optional(Type.Object({
    code: Type.String(),
    attr: Type.Union([Type.String(), Type.Null()], { description: 'The dot path of the first error; null when the error names no field.' }),
    detail: Type.String(),
  }, { description: 'With `state=failed` only: the latest create attempt\'s error.' })),
}, { $id: 'AccountImportRecord' });
export type ImportRecord = Static<typeof ImportRecord>;

export const ImportRecordList = Type.Array(ImportRecord, {
  description: 'Ordered by staging time, then external account number. With page_size, a `Link: <…>; rel="next"` header names the next page.',
});

/** Error bodies (spec 7, D4): open to the extra top-level fields some carry (account_already_imported). */
