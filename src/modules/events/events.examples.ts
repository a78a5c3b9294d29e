import { EXAMPLE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { EXAMPLE_SERVICE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import type { EventList } from './events.schemas.ts';

// OpenAPI examples: the first events of the example account.

export const EVENTS: EventList = [
  {
    id: '1', type: 'import_process.staged', created_at: '2025-03-04T10:14:58Z', import_supplier: DEMO.supplier,
    external_account_number: EXAMPLE_ACCOUNT_NUMBER, data: { first_staging: true },
  },
  {
    id: '2', type: 'import_process.completed', created_at: '2025-03-04T10:15:00Z', import_supplier: DEMO.supplier,
    external_account_number: EXAMPLE_ACCOUNT_NUMBER,
    data: { account_created_at: '2025-03-04T10:15:00Z', service_account_number: EXAMPLE_SERVICE_ACCOUNT_NUMBER },
  },
  {
    id: '3', type: 'post_import.completed', created_at: '2025-03-04T10:16:00Z', import_supplier: DEMO.supplier,
    external_account_number: EXAMPLE_ACCOUNT_NUMBER, data: { kind: 'notes', added: 2, already_existing: 0 },
  },
];

const UNKNOWN = `No event "99" of import supplier "${DEMO.supplier}"; it may be older than the retention period. Read from the start without after.`;
export const UNKNOWN_AFTER = { detail: UNKNOWN, code: 'invalid', errors: [{ detail: UNKNOWN, code: 'invalid', attr: 'after' }] };
