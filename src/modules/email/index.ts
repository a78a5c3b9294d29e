// The email module's surface: welcome emails queued in the creating transaction, the outbox's queue and worker.
export { queueEmails } from './outbox.repository.ts';
export { defineEmailQueue, type SenderLogger, startOutboxSender } from './outbox.sender.ts';
export { welcomeEmail } from './welcome-email.ts';
