import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { EmailTransport, OutgoingEmail } from '../../src/modules/email/index.ts';
import { WELCOME_EMAIL_QUEUE } from '../../src/modules/email/index.ts';
import { OUTBOX_POLICY, startOutboxSender } from '../../src/modules/email/index.ts';
import { QUEUE_SCHEMA } from '../../src/queue/queue.ts';
import { processAccount, stage, stageAndCreate, waitUntil } from '../support/imports.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// Welcome emails (D6) on the job queue: the outbox row and its delivery job are written in the
// creating transaction; queue workers deliver them, retrying failures with backoff.
const t = await buildTestApp();
const db = t.store.db;
const quiet = { info() {}, error() {} };

function fakeTransport(fail?: string, delayMs = 0): EmailTransport & { sent: OutgoingEmail[]; failing: string | undefined } {
  const sent: OutgoingEmail[] = [];
  const transport = {
    sent,
    failing: fail,
    async send(email: OutgoingEmail) {
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (transport.failing) throw new Error(transport.failing);
      sent.push(email);
    },
    close() {},
  };
  return transport;
}

const sender = (transport: EmailTransport, concurrency = 2) => startOutboxSender({
  db, queue: t.queue, transport, concurrency, logger: quiet,
  config: { emailTransport: 'log', smtpUrl: undefined, emailFrom: 'imports@example.com', outboxIntervalMs: 500 },
});

async function emailsOf(accountNumber: string) {
  return db.selectFrom('outbox_emails as e').innerJoin('accounts as a', 'a.id', 'e.account_id')
    .select(['e.id', 'e.recipient', 'e.subject', 'e.body', 'e.attempts', 'e.sent_at', 'e.last_error'])
    .where('a.number', '=', accountNumber).orderBy('e.id').execute();
}

/** The queue's jobs of these emails: state, retry count, when the next try is due. */
async function jobsOf(emailIds: number[]) {
  const { rows } = await sql<{ state: string; retry_count: number; start_after: Date; retry_limit: number; retry_delay: number; retry_backoff: boolean }>`
    SELECT state::text AS state, retry_count, start_after, retry_limit, retry_delay, retry_backoff
    FROM ${sql.table(`${QUEUE_SCHEMA}.job`)} WHERE name = ${WELCOME_EMAIL_QUEUE}
      AND (data->>'email_id')::bigint IN (${sql.join(emailIds)}) ORDER BY created_on`.execute(db);
  return rows;
}

describe('welcome emails (D6) on the job queue', () => {
  test('creation writes one email per customer with an address and its job, only when the supplier has emails on', async () => {
    const on = await createTenant(t, { customerEmails: true });
    const { payload, number } = await stageAndCreate(t, on);
    const queued = await emailsOf(number);
    assert.deepEqual(queued.map((e) => [e.recipient, e.subject, e.attempts, e.sent_at]), [
      [payload.customers[0]!.email, `Welcome: your account ${number} is ready`, 0, null],
    ], 'Bob has an empty email: no email for him');
    assert.match(queued[0]!.body, new RegExp(`Dear ${payload.customers[0]!.given_name},[\\s\\S]*${number}`));
    assert.deepEqual((await jobsOf([queued[0]!.id])).map((j) => [j.state, j.retry_limit, j.retry_delay, j.retry_backoff]), [
      ['created', OUTBOX_POLICY.maxAttempts - 1, OUTBOX_POLICY.baseDelaySeconds, true],
    ], 'the job is written with the email, with the retry policy of the queue');

    const off = await createTenant(t);
    const quietAccount = await stageAndCreate(t, off);
    assert.deepEqual(await emailsOf(quietAccount.number), []);
  });

  test('a dry run writes neither the email nor its job', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const before = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(`${QUEUE_SCHEMA}.job`)} WHERE name = ${WELCOME_EMAIL_QUEUE}`.execute(db);
    const staged = await stage(t, tenant);
    const dry = await processAccount(t, tenant, staged.external_account_number, { dry_run: true });
    assert.equal(dry.json.code, 'dry_run_rolled_back');
    const after = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(`${QUEUE_SCHEMA}.job`)} WHERE name = ${WELCOME_EMAIL_QUEUE}`.execute(db);
    assert.equal(after.rows[0]!.n, before.rows[0]!.n);
  });

  test('a worker delivers a due email once, marks it sent and completes its job', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const { payload, number } = await stageAndCreate(t, tenant);
    const transport = fakeTransport();
    const worker = await sender(transport);
    try {
      await waitUntil(async () => Boolean((await emailsOf(number))[0]?.sent_at), 'the email is sent');
      const [email] = await emailsOf(number);
      assert.equal(email!.attempts, 1);
      assert.equal(email!.last_error, null);
      assert.deepEqual(transport.sent.filter((e) => e.to === payload.customers[0]!.email), [
        { from: 'imports@example.com', to: email!.recipient, subject: email!.subject, text: email!.body },
      ]);
      await waitUntil(async () => (await jobsOf([email!.id]))[0]?.state === 'completed', 'the job completes');
    } finally {
      await worker.stop();
    }
  });

  test('a failed send is retried by the queue with backoff, then delivered; the email keeps the last error meanwhile', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const { number } = await stageAndCreate(t, tenant);
    const transport = fakeTransport('smtp is down');
    const worker = await sender(transport);
    try {
      await waitUntil(async () => (await emailsOf(number))[0]?.last_error === 'smtp is down', 'the failure is recorded');
      let [email] = await emailsOf(number);
      assert.equal(email!.sent_at, null);
      assert.equal(email!.attempts, 1);
      await waitUntil(async () => (await jobsOf([email!.id]))[0]?.state === 'retry', 'the job waits for its retry');
      const [job] = await jobsOf([email!.id]);
      const delay = (job!.start_after.getTime() - Date.now()) / 1000;
      // pg-boss backoff: the first retry after between 1 and 2 times the base delay.
      assert.ok(delay > OUTBOX_POLICY.baseDelaySeconds - 10 && delay <= 2 * OUTBOX_POLICY.baseDelaySeconds + 1, `retry in 30–60 s, got ${delay}`);

      transport.failing = undefined;
      await sql`UPDATE ${sql.table(`${QUEUE_SCHEMA}.job`)} SET start_after = now() WHERE name = ${WELCOME_EMAIL_QUEUE} AND (data->>'email_id')::bigint = ${email!.id}`.execute(db);
      await waitUntil(async () => Boolean((await emailsOf(number))[0]?.sent_at), 'the retry sends it');
      [email] = await emailsOf(number);
      assert.equal(email!.attempts, 2);
      assert.equal(email!.last_error, null);
      assert.equal(transport.sent.filter((e) => e.to === email!.recipient).length, 1);
    } finally {
      await worker.stop();
    }
  });

  test('an email already sent is not sent again when its job runs twice', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const { number } = await stageAndCreate(t, tenant);
    const [email] = await emailsOf(number);
    await db.updateTable('outbox_emails').set({ sent_at: sql`now()` }).where('id', '=', email!.id).execute();
    const transport = fakeTransport();
    const worker = await sender(transport);
    try {
      await waitUntil(async () => (await jobsOf([email!.id]))[0]?.state === 'completed', 'the job completes');
      assert.equal(transport.sent.filter((e) => e.to === email!.recipient).length, 0);
      assert.equal((await emailsOf(number))[0]!.attempts, 0);
    } finally {
      await worker.stop();
    }
  });

  test('workers on many connections send each email exactly once', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const created = await Promise.all(Array.from({ length: 6 }, () => stageAndCreate(t, tenant)));
    const recipients = new Set(created.map((c) => c.payload.customers[0]!.email!));
    const [one, two] = [fakeTransport(undefined, 5), fakeTransport(undefined, 5)];
    const workers = [await sender(one, 3), await sender(two, 3)];
    try {
      await waitUntil(async () => {
        const sent = [...one.sent, ...two.sent].filter((e) => recipients.has(e.to));
        return sent.length >= recipients.size;
      }, 'every email is sent');
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    const mine = [...one.sent, ...two.sent].filter((e) => recipients.has(e.to));
    assert.equal(mine.length, recipients.size);
    assert.equal(new Set(mine.map((e) => e.to)).size, recipients.size);
  });

  test('the log transport is the default, and OUTBOX_INTERVAL_MS=0 turns sending off on this instance', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const { number } = await stageAndCreate(t, tenant);
    const lines: Array<{ obj: object; msg: string }> = [];
    const logger = { info: (obj: object, msg: string) => lines.push({ obj, msg }), error: (obj: object, msg: string) => lines.push({ obj, msg }) };
    const off = await startOutboxSender({
      db, queue: t.queue, logger, config: { emailTransport: 'log', smtpUrl: undefined, emailFrom: 'imports@example.com', outboxIntervalMs: 0 },
    });
    await off.stop();
    const worker = await startOutboxSender({
      db, queue: t.queue, logger, config: { emailTransport: 'log', smtpUrl: undefined, emailFrom: 'imports@example.com', outboxIntervalMs: 500 },
    });
    try {
      await waitUntil(async () => Boolean((await emailsOf(number))[0]?.sent_at), 'the worker delivers the email');
    } finally {
      await worker.stop();
    }
    const [email] = await emailsOf(number);
    assert.ok(lines.some((l) => l.msg === 'email delivered to the log transport'
      && JSON.stringify(l.obj) === JSON.stringify({ email: { to: email!.recipient, subject: email!.subject } })));
  });
});
