import { EXAMPLE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import { JOB } from '../migration-jobs/index.ts';
import { HOURS_SHOWN, type AccountAttempts, type SupplierStats, type SupplierSummaryList } from './stats.schemas.ts';

// OpenAPI examples: the demo supplier's statistics a little after a migration job started.

const HOUR = 3_600_000;
const LAST_HOUR = Date.parse('2025-03-04T10:00:00Z');

export const SUPPLIER_STATS: SupplierStats = {
  import_supplier: DEMO.supplier,
  status: 'ongoing',
  counts: { staged: 41, in_progress: 2, imported: 958, failed: 12, skipped: 1, rejected: 14 },
  created_per_hour: Array.from({ length: HOURS_SHOWN }, (_, i) => ({
    hour: `${new Date(LAST_HOUR - (HOURS_SHOWN - 1 - i) * HOUR).toISOString().slice(0, 19)}Z`,
    count: i === HOURS_SHOWN - 1 ? 958 : 0,
  })),
  errors_by_code: [
    { code: 'account_failed_validation', attr: 'customers.0.mobile', count: 9, examples: ['DEMO-0107', 'DEMO-0204', 'DEMO-0301', 'DEMO-0398', 'DEMO-0495'] },
    { code: 'supply_point_already_registered', attr: 'supply_addresses.0.supply_points.0.identifier', count: 3, examples: ['DEMO-0050', 'DEMO-0051', 'DEMO-0052'] },
  ],
  jobs: [{ ...JOB, state: 'running', started_at: '2025-03-04T10:21:00Z' }],
};

export const SUPPLIERS: SupplierSummaryList = [{ code: DEMO.supplier, status: 'ongoing' }];

export const ACCOUNT_ATTEMPTS: AccountAttempts = {
  import_supplier: DEMO.supplier,
  external_account_number: EXAMPLE_ACCOUNT_NUMBER,
  attempts: [
    { started_at: '2025-03-04T10:15:00Z', finished_at: '2025-03-04T10:15:00Z', dry_run: false, outcome: 'created', error: null },
    {
      started_at: '2025-03-04T10:12:41Z', finished_at: '2025-03-04T10:12:41Z', dry_run: false, outcome: 'failed',
      error: { code: 'operations_team_not_found', attr: 'operations_team_name', detail: 'No operations team named "Operatoins".' },
    },
  ],
};
