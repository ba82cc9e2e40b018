// The server's one logger: JSON lines (pino) on standard output, written asynchronously. A line
// is handed to the kernel by a write issued at once when none is in flight, or together with the
// lines queued behind the one in flight, so under load many lines go out in one write and a
// request never waits for whatever reads the output. close() writes every queued line before it
// resolves; `serve` awaits it before exiting, so no line is lost on SIGTERM.
import pino, { type Logger, type LoggerOptions } from 'pino';
import { redactUrl } from './http/redact.js';

/** The logger's options: credentials in headers, cookies and URLs never reach a line. */
export function logOptions(
  level: string,
  stream?: NodeJS.WritableStream,
): LoggerOptions & { stream?: NodeJS.WritableStream } {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
      censor: '[redacted]',
    },
    serializers: {
      req(req: { method: string; url: string; id: string; ip?: string }) {
        return { id: req.id, method: req.method, url: redactUrl(req.url), ip: req.ip };
      },
    },
  };
}

export interface ServerLog {
  log: Logger;
  /** Resolves once every line logged so far is written; nothing may be logged after it. */
  close(): Promise<void>;
}

export function serverLog(level: string, fd = 1): ServerLog {
  const dest = pino.destination({ dest: fd, sync: false, minLength: 0 });
  const log = pino(logOptions(level), dest);
  let closed: Promise<void> | null = null;
  return {
    log,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        dest.once('close', () => resolve());
        dest.once('error', () => resolve());
        dest.end();
      })),
  };
}
