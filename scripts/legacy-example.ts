import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PLANTED_ROWS, writeLegacyExport } from '../test/support/legacy-export.ts';

// Writes examples/legacy-export/*.csv again (`node --import tsx scripts/legacy-example.ts`): 300
// accounts of a legacy export, the transactions in ledger (date) order, and a few broken rows
// planted at the end of their files. test/http/convert.test.ts converts it and checks the rejects.
const dir = fileURLToPath(new URL('../examples/legacy-export', import.meta.url));
await writeLegacyExport({ dir, accounts: 300, transactionsPerAccount: 6, order: 'by-date', messy: true, seed: 2026 });
for (const planted of PLANTED_ROWS) appendFileSync(join(dir, `${planted.file}.csv`), `${planted.row}\n`);
