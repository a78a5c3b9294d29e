import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { accountPayload } from './payloads.ts';

// NDJSON migration files (D11 records) for the import-migrate tests and the docs transcript: good
// records, and every `failEvery`-th one failing at the account step (an invalid mobile number).
export interface FileSpec { supplier: string; lines: number; failEvery?: number; start?: number }

export function migrationRecord(supplier: string, fail: boolean): object {
  const account = accountPayload(supplier);
  if (fail) account.customers[0]!.mobile = '+44 12';
  return { account };
}

export async function writeMigrationFile(path: string, spec: FileSpec): Promise<string[]> {
  const out = createWriteStream(path);
  const lines: string[] = [];
  for (let i = 1; i <= spec.lines; i++) {
    const line = JSON.stringify(migrationRecord(spec.supplier, spec.failEvery !== undefined && i % spec.failEvery === 0));
    lines.push(line);
    if (!out.write(`${line}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return lines;
}
