// The email module's surface: welcome emails queued in the creating transaction, the outbox's queue and
// worker; for the tests, the transports (a test's own, or SMTP), the queue's name and its job policy.
export { type EmailTransport, type OutgoingEmail, smtpTransport, transportFor } from './email.transports.ts';
export { queueEmails, WELCOME_EMAIL_QUEUE } from './outbox.repository.ts';
export { defineEmailQueue, OUTBOX_POLICY, type SenderLogger, startOutboxSender } from './outbox.sender.ts';
export { welcomeEmail } from './welcome-email.ts';
