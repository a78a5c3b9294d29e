import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { smtpTransport, transportFor } from '../../src/modules/email/index.ts';

// The SMTP transport (EMAIL_TRANSPORT=smtp) against a real SMTP server on loopback: what the outbox
// sender hands it arrives as a mail, and a refusal by the server rejects, so the sender retries.
interface Received { from: string; to: string[]; raw: string }
const received: Received[] = [];

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onRcptTo(address, _session, callback) {
    if (address.address.endsWith('@refused.example')) callback(new Error('mailbox unavailable'));
    else callback();
  },
  onData(stream, session, callback) {
    let raw = '';
    stream.on('data', (chunk: Buffer) => { raw += chunk.toString('utf8'); });
    stream.on('end', () => {
      received.push({
        from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        to: session.envelope.rcptTo.map((r) => r.address),
        raw,
      });
      callback();
    });
  },
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('SMTP email transport (D6)', () => {
  test('delivers the email to the SMTP server named by SMTP_URL', async () => {
    const transport = transportFor({ emailTransport: 'smtp', smtpUrl: url }, { info() {} });
    try {
      await transport.send({ from: 'imports@example.com', to: 'ada@example.com', subject: 'Welcome, Ada', text: 'Your account A-12345678 is ready.' });
    } finally {
      transport.close();
    }
    const mail = received.find((m) => m.to.includes('ada@example.com'));
    assert.ok(mail, 'the server received the mail');
    assert.equal(mail.from, 'imports@example.com');
    assert.match(mail.raw, /^Subject: Welcome, Ada$/m);
    assert.match(mail.raw, /Your account A-12345678 is ready\./);
  });

  test('a refusal by the server rejects the send, so the outbox keeps the email for a retry', async () => {
    const transport = smtpTransport(url);
    try {
      await assert.rejects(transport.send({ from: 'imports@example.com', to: 'nobody@refused.example', subject: 'Welcome', text: 'x' }),
        /mailbox unavailable/);
    } finally {
      transport.close();
    }
  });
});
