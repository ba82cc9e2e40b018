// The server's one logger: JSON lines (pino) on standard output, written asynchronously. A line
// goes to the kernel at once in an asynchronous write when none is in flight; lines logged while
// one is in flight are queued and joined into the next write when it completes. So a request
// never waits on whatever reads the output, a busy server makes one write for many lines, and a
// line is out within microseconds of being logged when the output keeps up. (pino's own
// asynchronous destination does the same but grows one string by concatenation while a write is
// in flight, which cost more CPU per line here than writing synchronously.)
// close() writes every queued line before it resolves; `serve` awaits it before exiting, so no
// line is lost on SIGTERM.
import { write, writeSync } from 'node:fs';
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

/** Lines queued while the reader does not keep up, at most; past it lines are counted and dropped. */
const MAX_QUEUED_BYTES = 32 * 1024 * 1024;
/** After EAGAIN (a full non-blocking pipe), the write is tried again this much later. */
const RETRY_MS = 10;

/** A pino destination: asynchronous fs.write, lines queued meanwhile joined into the next write. */
export class BatchedOutput {
  private queued: string[] = [];
  private queuedBytes = 0;
  private dropped = 0;
  private writing = false;
  private closed = false;
  private broken = false;
  private idle: (() => void)[] = [];

  constructor(private readonly fd: number) {
    // A process that exits without close() (an uncaught error, process.exit elsewhere) still
    // writes what is queued; a write already in flight is the kernel's by then or lost with it.
    process.once('exit', () => this.writeQueuedSync());
  }

  write(line: string): boolean {
    if (this.broken) return true;
    if (this.queuedBytes > MAX_QUEUED_BYTES) {
      this.dropped++;
      return true;
    }
    this.queued.push(line);
    this.queuedBytes += line.length;
    if (this.writing) return true;
    if (this.closed) this.writeQueuedSync();
    else this.flush();
    return true;
  }

  /** Resolves once every line queued so far is written; lines logged afterwards go out at once. */
  close(): Promise<void> {
    this.closed = true;
    return new Promise<void>((resolve) => {
      this.idle.push(resolve);
      this.flush();
    });
  }

  private readonly flush = (): void => {
    if (this.writing) return;
    if (this.queued.length === 0 || this.broken) {
      const waiting = this.idle;
      this.idle = [];
      for (const resolve of waiting) resolve();
      return;
    }
    if (this.dropped > 0) {
      this.queued.push(
        `${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, msg: 'log lines dropped: the reader of standard output fell behind', dropped: this.dropped })}\n`,
      );
      this.dropped = 0;
    }
    const buf = Buffer.from(this.queued.join(''));
    this.queued = [];
    this.queuedBytes = 0;
    this.writing = true;
    this.send(buf);
  };

  private send(buf: Buffer): void {
    write(this.fd, buf, 0, buf.length, null, (err, n) => {
      if (err) {
        const code = err.code;
        if (code === 'EAGAIN') return void setTimeout(() => this.send(buf), RETRY_MS);
        // The reader is gone (EPIPE) or the descriptor is bad: nothing more can be written.
        this.broken = true;
        this.queued = [];
      } else if (n < buf.length) return this.send(buf.subarray(n));
      this.writing = false;
      this.flush();
    });
  }

  private writeQueuedSync(): void {
    if (this.queued.length === 0 || this.broken) return;
    let buf = Buffer.from(this.queued.join(''));
    this.queued = [];
    this.queuedBytes = 0;
    // A full non-blocking pipe answers EAGAIN: wait for the reader, up to about 5 s.
    for (let tries = 0; buf.length > 0 && tries < 500;) {
      try {
        buf = buf.subarray(writeSync(this.fd, buf));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
        tries++;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RETRY_MS);
      }
    }
  }
}

export interface ServerLog {
  log: Logger;
  /** Resolves once every line logged so far is written. */
  close(): Promise<void>;
}

export function serverLog(level: string, fd = 1): ServerLog {
  const out = new BatchedOutput(fd);
  const log = pino(logOptions(level), out);
  let closed: Promise<void> | null = null;
  return { log, close: () => (closed ??= out.close()) };
}
