import { Type, type Static } from '@sinclair/typebox';
import { Choice } from '../../schemas/choice.ts';
import { SUPPLIER_STATUSES } from '../admin/index.ts';
import { Job } from '../migration-jobs/index.ts';

// The statistics of one supplier (D14): what the dashboard shows, from indexed queries.

export const HOURS_SHOWN = 48;
export const MAX_ERROR_GROUPS = 20;
export const MAX_GROUP_EXAMPLES = 5;

export const StatsCounts = Type.Object({
  staged: Type.Integer({ description: 'Staged, not imported, not skipped (failed and in_progress are among them).' }),
  in_progress: Type.Integer({ description: 'Staged accounts a create is running for now.' }),
  imported: Type.Integer({ description: 'Accounts created.' }),
  failed: Type.Integer({ description: 'Staged accounts whose latest create attempt failed.' }),
  skipped: Type.Integer({ description: 'Marked to skip and not imported.' }),
  rejected: Type.Integer({
    description: 'Records of the supplier\'s migration jobs that failed before their account was staged: lines that could not be read, '
      + 'repeated accounts, accounts that failed validation. Not among the staged accounts (so not in failed); a record fixed and staged later no longer counts. '
      + 'Dry-run (pre-flight) jobs never count.',
  }),
});
export type StatsCounts = Static<typeof StatsCounts>;

export const HourCount = Type.Object({
  hour: Type.String({ description: 'The start of the hour, UTC: YYYY-MM-DDTHH:00:00Z.' }),
  count: Type.Integer({ description: 'Accounts created in that hour.' }),
});
export type HourCount = Static<typeof HourCount>;

export const ErrorGroup = Type.Object({
  code: Type.String({ description: 'What is wrong: the code of the first error of the latest failed create attempt (for a failed validation, the field\'s own code, such as invalid_phone_number).' }),
  attr: Type.Union([Type.String(), Type.Null()], { description: 'The dot path of its first error; null when the error names no field.' }),
  count: Type.Integer(),
  examples: Type.Array(Type.String(), { maxItems: MAX_GROUP_EXAMPLES, description: `Up to ${MAX_GROUP_EXAMPLES} external account numbers, in order.` }),
});
export type ErrorGroup = Static<typeof ErrorGroup>;

export const SupplierStats = Type.Object({
  import_supplier: Type.String(),
  status: Choice(SUPPLIER_STATUSES),
  counts: StatsCounts,
  created_per_hour: Type.Array(HourCount, {
    minItems: HOURS_SHOWN, maxItems: HOURS_SHOWN, description: `The last ${HOURS_SHOWN} hours, oldest first, the current hour last; every hour present.`,
  }),
  errors_by_code: Type.Array(ErrorGroup, {
    maxItems: MAX_ERROR_GROUPS,
    description: 'The failing accounts (counts.failed) grouped by the code and attr of the first error of their latest attempt, largest first (then by code and attr).',
  }),
  jobs: Type.Array(Job, { description: 'The supplier\'s migration jobs that are not completed or cancelled, newest first; each as GET migration-jobs/<id>/.' }),
}, { $id: 'SupplierStats', title: 'SupplierStats' });
export type SupplierStats = Static<typeof SupplierStats>;

export const SupplierSummary = Type.Object({
  code: Type.String({ description: 'The import supplier code.' }),
  status: Choice(SUPPLIER_STATUSES),
});
export const SupplierSummaryList = Type.Array(SupplierSummary, { description: 'The caller\'s suppliers, by code.' });
export type SupplierSummaryList = Static<typeof SupplierSummaryList>;

export const MAX_ATTEMPTS_SHOWN = 20;
export const ATTEMPT_OUTCOMES = ['created', 'dry_run_rolled_back', 'failed'] as const;

export const CreateAttempt = Type.Object({
  started_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
  finished_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
  dry_run: Type.Boolean(),
  outcome: Choice(ATTEMPT_OUTCOMES),
  error: Type.Union([Type.Object({
    code: Type.String(),
    attr: Type.Union([Type.String(), Type.Null()], { description: 'The dot path of the first error; null when the error names no field.' }),
    detail: Type.String(),
  }), Type.Null()], { description: 'Null unless the attempt failed.' }),
});
export const AccountAttempts = Type.Object({
  import_supplier: Type.String(),
  external_account_number: Type.String(),
  attempts: Type.Array(CreateAttempt, { maxItems: MAX_ATTEMPTS_SHOWN, description: `The latest ${MAX_ATTEMPTS_SHOWN} create attempts, newest first.` }),
});
export type AccountAttempts = Static<typeof AccountAttempts>;
