import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

// Counts of failed authentications (migration 011): one row per scope, subject and 10-second bucket.
export type ThrottleScope = 'address' | 'key_prefix';
export interface ThrottleSubject { scope: ThrottleScope; subject: string }
export interface FailureCount { scope: ThrottleScope; failures: number; retryAfterSeconds: number }

const BUCKET_SECONDS = 10;

/** Counts one failure of each subject at `now` (the caller's clock, not the store's: a test can move it). */
export async function recordFailure(db: Kysely<Database>, subjects: ThrottleSubject[], now: Date): Promise<void> {
  const bucket = new Date(Math.floor(now.getTime() / (BUCKET_SECONDS * 1000)) * BUCKET_SECONDS * 1000);
  const rows = subjects.map(({ scope, subject }) => sql`(${scope}, ${subject}, ${bucket}::timestamptz, 1)`);
  await sql`INSERT INTO auth_failures (scope, subject, bucket, failures) VALUES ${sql.join(rows)}
    ON CONFLICT (scope, subject, bucket) DO UPDATE SET failures = auth_failures.failures + 1`.execute(db);
}

/** Failures of each subject within the `windowSeconds` before `now`, and when its oldest counted bucket leaves the window. */
export async function countFailures(db: Kysely<Database>, subjects: ThrottleSubject[], windowSeconds: number, now: Date): Promise<FailureCount[]> {
  const pairs = subjects.map(({ scope, subject }) => sql`(${scope}, ${subject})`);
  const { rows } = await sql<FailureCount>`
    SELECT scope, sum(failures)::int AS failures,
           ceil(extract(epoch FROM min(bucket) + make_interval(secs => ${windowSeconds}) - ${now}::timestamptz))::int AS "retryAfterSeconds"
      FROM auth_failures
     WHERE (scope, subject) IN (${sql.join(pairs)}) AND bucket > ${now}::timestamptz - make_interval(secs => ${windowSeconds})
     GROUP BY scope`.execute(db);
  return rows;
}

export async function deleteOldFailures(db: Kysely<Database>, now: Date): Promise<void> {
  await sql`DELETE FROM auth_failures WHERE bucket < ${now}::timestamptz - interval '1 hour'`.execute(db);
}
