import type { LoadResult, LoadSpec } from '../load-worker.ts';
import { runJsonChild } from './proc.ts';

export type { LoadResult, LoadSpec };

/** Drives load from a separate process (bench/load-worker.ts) and returns its summary. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const result = await runJsonChild<LoadResult>('bench/load-worker.ts', spec);
  if (result.firstFailure) process.stderr.write(`  first failure of ${result.non2xx + result.errors}: ${result.firstFailure}\n`);
  return result;
}
