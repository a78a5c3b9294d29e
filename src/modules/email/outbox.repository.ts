import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { JobQueue } from '../../queue/queue.ts';
import type { WelcomeEmail } from './welcome-email.ts';

// The outbox: an email is a row written in the transaction that causes it, together with its
// delivery job on the queue (same transaction), so a rolled-back create sends nothing and a
// committed one always has its job. The row keeps what was sent, how many attempts, the last error.
type Db = Kysely<Database>;

export const WELCOME_EMAIL_QUEUE = 'welcome_email';

/** Queues emails to any number of accounts: their rows in one statement, their jobs in one more. */
export async function queueEmails(
  queue: JobQueue, trx: Transaction<Database>, emails: Array<WelcomeEmail & { accountId: number }>,
): Promise<void> {
  if (emails.length === 0) return;
  const rows = await trx.insertInto('outbox_emails')
    .values(emails.map((e) => ({ account_id: e.accountId, recipient: e.recipient, subject: e.subject, body: e.body })))
    .returning('id').execute();
  await queue.sendMany(WELCOME_EMAIL_QUEUE, rows.map((r) => ({ email_id: r.id })), { trx });
}

export interface OutboxEmail { id: number; recipient: string; subject: string; body: string; attempts: number; sent_at: Date | null }

/** Counts the attempt before it is made, so an attempt cut short by a crash still shows. */
export async function beginAttempt(db: Db, id: number): Promise<OutboxEmail | undefined> {
  return db.updateTable('outbox_emails').set({ attempts: sql`attempts + 1`, next_attempt_at: sql<Date>`now()` })
    .where('id', '=', id).where('sent_at', 'is', null)
    .returning(['id', 'recipient', 'subject', 'body', 'attempts', 'sent_at']).executeTakeFirst();
}

export async function markSent(db: Db, id: number): Promise<void> {
  await db.updateTable('outbox_emails').set({ sent_at: sql<Date>`now()`, last_error: null }).where('id', '=', id).execute();
}

export async function recordFailure(db: Db, id: number, error: string): Promise<void> {
  await db.updateTable('outbox_emails').set({ last_error: error.slice(0, 1000) }).where('id', '=', id).execute();
}
