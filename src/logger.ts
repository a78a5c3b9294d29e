import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.ts';

// The one logger of a process (server or worker). `json` writes one object a line to stdout for a
// collector; `pretty` is for a developer's terminal. Both write synchronously in this thread, so the
// last lines before an exit (the "stopped" line, a refusal to start) are never lost in a buffer.
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat'>): Logger {
  const options = { level: config.logLevel };
  if (config.logFormat === 'json') return pino(options);
  return pino(options, pretty({
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    // A request line's method, url, status and time are in its message (below); not repeated.
    ignore: 'pid,hostname,method,url,status,ms',
    messageFormat: prettyMessage,
  }));
}

// A request's completion line reads as one line ("POST /v1/… 400 account_failed_validation 12.3 ms"),
// its other fields (request id, supplier, account) follow indented as pino-pretty prints them.
function prettyMessage(log: Record<string, unknown>, messageKey: string): string {
  const message = String(log[messageKey] ?? '');
  if (typeof log.status !== 'number' || typeof log.method !== 'string') return message;
  const code = typeof log.code === 'string' ? ` ${log.code}` : '';
  const ms = typeof log.ms === 'number' ? ` (${log.ms} ms)` : '';
  return `${message}: ${log.method} ${String(log.url)} → ${log.status}${code}${ms}`;
}
