import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { WelcomeEmail } from './welcome-email.ts';

// The outbox: emails are written in the transaction that causes them (so a rolled-back create sends
// nothing) and delivered later by the sender, at least once.
type Db = Kysely<Database>;

export async function queueEmails(trx: Transaction<Database>, accountId: number, emails: WelcomeEmail[]): Promise<void> {
  if (emails.length === 0) return;
  await trx.insertInto('outbox_emails')
    .values(emails.map((e) => ({ account_id: accountId, recipient: e.recipient, subject: e.subject, body: e.body })))
    .execute();
}

export interface ClaimedEmail { id: number; recipient: string; subject: string; body: string; attempts: number }

/**
 * Claims up to `limit` due emails in one statement. SKIP LOCKED lets several senders (instances) claim
 * disjoint batches; pushing next_attempt_at out by `leaseSeconds` is the claim itself, so the emails are
 * sent outside any transaction and a sender that dies mid-send only delays them until the lease ends.
 */
export async function claimDueEmails(db: Db, limit: number, leaseSeconds: number, maxAttempts: number): Promise<ClaimedEmail[]> {
  const { rows } = await sql<ClaimedEmail>`
    UPDATE outbox_emails SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
    WHERE id IN (
      SELECT id FROM outbox_emails
      WHERE sent_at IS NULL AND next_attempt_at <= now() AND attempts < ${maxAttempts}
      ORDER BY next_attempt_at, id
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING id, recipient, subject, body, attempts`.execute(db);
  return rows;
}

export async function markSent(db: Db, id: number): Promise<void> {
  await db.updateTable('outbox_emails').set({ sent_at: sql<Date>`now()`, last_error: null }).where('id', '=', id).execute();
}

export async function scheduleRetry(db: Db, id: number, delaySeconds: number, error: string): Promise<void> {
  await db.updateTable('outbox_emails')
    .set({ next_attempt_at: sql<Date>`now() + make_interval(secs => ${delaySeconds})`, last_error: error.slice(0, 1000) })
    .where('id', '=', id).execute();
}
