import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { EmailTransport, OutgoingEmail } from '../../src/modules/email/email.transports.ts';
import { deliverDueEmails, OUTBOX_POLICY, retryDelaySeconds, startOutboxSender } from '../../src/modules/email/outbox.sender.ts';
import { PG_ONLY, stageAndCreate, waitUntil } from '../support/imports.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

const t = await buildTestApp();
const db = t.store.db;

function fakeTransport(fail?: string, delayMs = 0): EmailTransport & { sent: OutgoingEmail[] } {
  const sent: OutgoingEmail[] = [];
  return {
    sent,
    async send(email) {
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (fail) throw new Error(fail);
      sent.push(email);
    },
    close() {},
  };
}

/** Delivers batches until none is due (other tests' emails go through the fake transport too). */
async function drain(transport: EmailTransport): Promise<void> {
  for (let batch = 0; batch < 1000; batch += 1) {
    const result = await deliverDueEmails(db, transport, 'imports@example.com');
    if (result.sent + result.failed === 0) return;
  }
  throw new Error('the outbox did not drain');
}

async function emailsOf(accountNumber: string) {
  return db.selectFrom('outbox_emails as e').innerJoin('accounts as a', 'a.id', 'e.account_id')
    .select(['e.id', 'e.recipient', 'e.subject', 'e.body', 'e.attempts', 'e.sent_at', 'e.last_error', 'e.next_attempt_at'])
    .where('a.number', '=', accountNumber).orderBy('e.id').execute();
}

describe('welcome emails (D6)', () => {
  test('creation queues one email per customer with an address, only when the supplier has emails on', async () => {
    const on = await createTenant(t, { customerEmails: true });
    const { payload, number } = await stageAndCreate(t, on);
    const queued = await emailsOf(number);
    assert.deepEqual(queued.map((e) => [e.recipient, e.subject, e.attempts, e.sent_at]), [
      [payload.customers[0]!.email, `Welcome: your account ${number} is ready`, 0, null],
    ], 'Bob has an empty email: no email for him');
    assert.match(queued[0]!.body, new RegExp(`Dear ${payload.customers[0]!.given_name},[\\s\\S]*${number}`));

    const off = await createTenant(t);
    const quiet = await stageAndCreate(t, off);
    assert.deepEqual(await emailsOf(quiet.number), []);
  });

  test('the sender delivers a due email once and marks it sent', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const { payload, number } = await stageAndCreate(t, tenant);
    const transport = fakeTransport();
    await drain(transport);
    const [email] = await emailsOf(number);
    assert.ok(email?.sent_at);
    assert.equal(email.attempts, 1);
    assert.equal(email.last_error, null);
    assert.deepEqual(transport.sent.filter((e) => e.to === payload.customers[0]!.email), [
      { from: 'imports@example.com', to: email.recipient, subject: email.subject, text: email.body },
    ]);
    await drain(transport);
    assert.equal(transport.sent.filter((e) => e.to === email.recipient).length, 1, 'a sent email is not sent again');
  });

  test('a failed send is retried later with backoff, then delivered; past the maximum it is left alone', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const { number } = await stageAndCreate(t, tenant);
    await drain(fakeTransport('smtp is down'));
    let [email] = await emailsOf(number);
    assert.equal(email!.sent_at, null);
    assert.equal(email!.attempts, 1);
    assert.equal(email!.last_error, 'smtp is down');
    const delay = (email!.next_attempt_at.getTime() - Date.now()) / 1000;
    assert.ok(delay > retryDelaySeconds(1) - 10 && delay <= retryDelaySeconds(1) + 1, `retry in ~30 s, got ${delay}`);

    const working = fakeTransport();
    await drain(working);
    assert.equal(working.sent.filter((e) => e.to === email!.recipient).length, 0, 'not due yet');
    await db.updateTable('outbox_emails').set({ next_attempt_at: sql`now()` }).where('id', '=', email!.id).execute();
    await drain(working);
    [email] = await emailsOf(number);
    assert.ok(email!.sent_at);
    assert.equal(email!.attempts, 2);
    assert.equal(email!.last_error, null);

    const other = await stageAndCreate(t, tenant);
    await db.updateTable('outbox_emails').set({ attempts: OUTBOX_POLICY.maxAttempts })
      .where('account_id', '=', (await db.selectFrom('accounts').select('id').where('number', '=', other.number).executeTakeFirstOrThrow()).id).execute();
    await drain(working);
    assert.equal((await emailsOf(other.number))[0]!.sent_at, null, 'given up after the maximum attempts');
  });

  test('backoff doubles from 30 s and is capped at an hour', () => {
    assert.deepEqual([1, 2, 3, 7, 8, 20].map(retryDelaySeconds), [30, 60, 120, 1920, 3600, 3600]);
  });

  test('two senders at once send each email exactly once (SKIP LOCKED)', { skip: PG_ONLY }, async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const created = await Promise.all(Array.from({ length: 6 }, () => stageAndCreate(t, tenant)));
    const recipients = new Set(created.map((c) => c.payload.customers[0]!.email!));
    const [one, two] = [fakeTransport(undefined, 5), fakeTransport(undefined, 5)];
    await Promise.all([drain(one), drain(two)]);
    const mine = [...one.sent, ...two.sent].filter((e) => recipients.has(e.to));
    assert.equal(mine.length, recipients.size);
    assert.equal(new Set(mine.map((e) => e.to)).size, recipients.size);
  });

  test('startOutboxSender polls with the log transport by default and stops cleanly', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const { number } = await stageAndCreate(t, tenant);
    const lines: Array<{ obj: object; msg: string }> = [];
    const logger = { info: (obj: object, msg: string) => lines.push({ obj, msg }), error: (obj: object, msg: string) => lines.push({ obj, msg }) };
    const sender = startOutboxSender({
      db, logger, config: { emailTransport: 'log', smtpUrl: undefined, emailFrom: 'imports@example.com', outboxIntervalMs: 20 },
    });
    try {
      await waitUntil(async () => Boolean((await emailsOf(number))[0]?.sent_at), 'the sender delivers the email');
    } finally {
      await sender.stop();
    }
    const [email] = await emailsOf(number);
    assert.ok(lines.some((l) => l.msg === 'email delivered to the log transport'
      && JSON.stringify(l.obj) === JSON.stringify({ email: { to: email!.recipient, subject: email!.subject } })));
  });
});
