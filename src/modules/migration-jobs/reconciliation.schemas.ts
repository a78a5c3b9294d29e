import { Type, type Static } from '@sinclair/typebox';
import { Choice } from '../../schemas/choice.ts';
import { Nullable } from '../../schemas/text.ts';
import { JOB_STATES, MEASURES } from './migration-jobs.schemas.ts';

// Reconciliation: the wire shapes of a job's report and of its exception lines.

export const MEASURE_VERDICTS = ['balanced', 'differs', 'not_declared'] as const;
export type MeasureVerdict = (typeof MEASURE_VERDICTS)[number];
export const REPORT_VERDICTS = ['balanced', 'differs', 'incomplete'] as const;
export const EXCEPTION_MEASURES = [...MEASURES, 'not_migrated', 'skipped', 'failed', 'account_differs'] as const;

/** A count (an integer) or a sum of money (a decimal string). */
const Figure = (description: string) => Type.Unsafe<number | string>({ type: ['integer', 'string'], description });
const NullableFigure = (description: string) => Type.Unsafe<number | string | null>({ type: ['integer', 'string', 'null'], description });

export const MeasureLine = Type.Object({
  measure: Choice(MEASURES),
  control: NullableFigure('The legacy system\'s figure, from the job\'s control_totals; null when not declared.'),
  file: Figure('What the uploaded lines hold (counted as they were uploaded).'),
  migrated: Figure('What the store holds for the items the records carry, read by their own keys.'),
  verdict: Choice(MEASURE_VERDICTS, 'balanced: every declared figure is equal; not_declared: no control figure, file and migrated equal.'),
});
export type MeasureLine = Static<typeof MeasureLine>;

export const ReconciliationReport = Type.Object({
  job_id: Type.String({ format: 'uuid' }),
  import_supplier: Type.String(),
  generated_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
  job_state: Choice(JOB_STATES),
  file: Type.Object({
    sha256: Nullable(Type.String(), 'SHA-256 (hex) of the uploaded lines, decompressed, each with its newline, all uploads in order; '
      + 'null when two uploads of the job overlapped, or the job was uploaded before the service kept it.'),
    lines: Type.Integer({ description: 'Lines stored (blank lines not counted).' }),
    unparsable_lines: Type.Integer({ description: 'Lines that failed at step parse.' }),
  }),
  uploaded_by: Nullable(Type.String(), 'The prefix of the API key that uploaded the first lines.'),
  started_at: Nullable(Type.String(), 'UTC.'),
  finished_at: Nullable(Type.String(), 'UTC.'),
  measures: Type.Array(MeasureLine),
  verdict: Choice(REPORT_VERDICTS, 'incomplete while the job is not finished; else differs when a measure differs or a record is an exception; else balanced.'),
  exceptions: Type.Integer({ description: 'The lines of the exceptions list.' }),
}, { $id: 'MigrationJobReconciliation' });
export type ReconciliationReport = Static<typeof ReconciliationReport>;

export const ExceptionLine = Type.Object({
  line: Type.Integer(),
  external_account_number: Nullable(Type.String()),
  measure: Choice(EXCEPTION_MEASURES, 'not_migrated: the store holds no account for the record (or its line could not be read); '
    + 'skipped: the store holds no account for the record because its account is marked to skip; '
    + 'failed: the store holds the record\'s account but the record failed, so the store holds other data than its line sent '
    + '(a transaction or statement whose id it holds with other details, drift refused), even where every count and sum agrees; '
    + 'its errors are in the job\'s results; account_differs: the record ran on an account imported before with other data, '
    + 'which the store kept as it was (its account_differs warnings, in the job\'s results, say how).'),
  file: NullableFigure('What the line holds; null for not_migrated, skipped, failed and account_differs.'),
  migrated: NullableFigure('What the store holds; null for not_migrated, skipped, failed and account_differs.'),
}, { $id: 'MigrationJobReconciliationException' });
export type ExceptionLine = Static<typeof ExceptionLine>;

export const EXCEPTION_CSV_COLUMNS = ['line', 'external_account_number', 'measure', 'file', 'migrated'] as const;
