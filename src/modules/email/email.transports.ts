import nodemailer from 'nodemailer';
import type { Config } from '../../config.ts';

// Where outbox emails go: a log line (the default, for the embedded store and development) or SMTP
// through nodemailer (EMAIL_TRANSPORT=smtp, SMTP_URL=smtp://user:pass@host:587).
export interface OutgoingEmail { from: string; to: string; subject: string; text: string }

export interface EmailTransport {
  send(email: OutgoingEmail): Promise<void>;
  close(): void;
}

export interface TransportLogger { info(obj: object, msg: string): void }

export function logTransport(logger: TransportLogger): EmailTransport {
  return {
    async send(email) {
      logger.info({ email: { to: email.to, subject: email.subject } }, 'email delivered to the log transport');
    },
    close() {},
  };
}

export function smtpTransport(url: string): EmailTransport {
  const transporter = nodemailer.createTransport(url);
  return {
    async send(email) {
      await transporter.sendMail(email);
    },
    close() { transporter.close(); },
  };
}

export function transportFor(config: Pick<Config, 'emailTransport' | 'smtpUrl'>, logger: TransportLogger): EmailTransport {
  if (config.emailTransport === 'smtp') {
    if (!config.smtpUrl) throw new Error('SMTP_URL is required when EMAIL_TRANSPORT=smtp');
    return smtpTransport(config.smtpUrl);
  }
  return logTransport(logger);
}
