// The server's one logger: JSON lines (pino) on standard output, written asynchronously and in
// batches. Lines are queued and written together by one asynchronous write at most every
// OPENRIG_LOG_FLUSH_MS (20 ms; at once when FLUSH_BYTES have queued), so a request never waits
// on whatever reads the output, and a server answering thousands of requests a second makes tens
// of writes a second, not one per line: each asynchronous write is a hand-off to libuv's thread
// pool and back, which cost more CPU than the request's line itself. (pino's own asynchronous
// destination grows one string by concatenation while a write is in flight, which cost more CPU
// per line here than writing synchronously.)
// close() writes every queued line before it resolves; `serve` awaits it before exiting, so no
// line is lost on SIGTERM. A process that exits otherwise writes its queue synchronously.
import { write as fsWrite, writeSync } from 'node:fs';
import pino, { type Bindings, type ChildLoggerOptions, type Logger, type LoggerOptions } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loggedUrl, type LoggedRequest } from './http/redact.js';

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
      req(req: LoggedRequest & { method: string; id: string; ip?: string }) {
        return { id: req.id, method: req.method, url: loggedUrl(req), ip: req.ip };
      },
    },
  };
}

/** Lines queued while the reader does not keep up, at most; past it lines are counted and dropped. */
const MAX_QUEUED_BYTES = 32 * 1024 * 1024;
/** After EAGAIN (a full non-blocking pipe), the write is tried again this much later. */
const RETRY_MS = 10;
/** A queued line waits at most this long for the others of its write (OPENRIG_LOG_FLUSH_MS). */
export const FLUSH_MS = 20;
/** Queued lines of this many bytes are written at once, without waiting for FLUSH_MS. */
const FLUSH_BYTES = 64 * 1024;

/** A pino destination: lines queued and joined into one asynchronous fs.write at a time. */
export class BatchedOutput {
  private queued: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private queuedBytes = 0;
  private dropped = 0;
  private writing = false;
  private closed = false;
  private broken = false;
  private idle: (() => void)[] = [];

  constructor(
    private readonly fd: number,
    /** How long a line may wait for others; 0: written as soon as no write is in flight. */
    private readonly flushMs = FLUSH_MS,
    /** fs.write, or a stand-in that counts the writes (tests). */
    private readonly write_: typeof fsWrite = fsWrite,
  ) {
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
    else this.schedule();
    return true;
  }

  /** Writes now when enough has queued; otherwise makes sure a write comes within flushMs. */
  private schedule(): void {
    if (this.flushMs === 0 || this.queuedBytes >= FLUSH_BYTES) this.flush();
    else if (!this.timer && this.queued.length > 0) {
      this.timer = setTimeout(this.flush, this.flushMs);
      // The process may exit meanwhile: the exit handler writes the queue.
      this.timer.unref();
    }
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
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
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
    this.write_(this.fd, buf, 0, buf.length, null, (err, n) => {
      if (err) {
        const code = err.code;
        if (code === 'EAGAIN') return void setTimeout(() => this.send(buf), RETRY_MS);
        // The reader is gone (EPIPE) or the descriptor is bad: nothing more can be written.
        this.broken = true;
        this.queued = [];
      } else if (n < buf.length) return this.send(buf.subarray(n));
      this.writing = false;
      // Closing: everything now. Otherwise what queued meanwhile waits for its batch.
      if (this.closed || this.broken || this.queued.length === 0) this.flush();
      else this.schedule();
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

export function serverLog(level: string, flushMs = FLUSH_MS, fd = 1): ServerLog {
  const out = new BatchedOutput(fd, flushMs);
  const log = pino(logOptions(level), out);
  let closed: Promise<void> | null = null;
  return { log, close: () => (closed ??= out.close()) };
}

const call = (fn: (...a: never[]) => void, self: FastifyBaseLogger, args: unknown[]): void => {
  Reflect.apply(fn, self, args);
};

/**
 * A request's logger (Fastify's `req.log`): the child of the app's logger bound to the request
 * id, made on the first line the request logs. Most requests log nothing but their access line,
 * which the app writes on its own logger with the request id as a field (the same line), so they
 * never pay for a child.
 */
export class RequestLog implements FastifyBaseLogger {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}

  private get log(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.opts));
  }

  get level(): string {
    return this.made?.level ?? this.opts.level ?? this.parent.level;
  }
  set level(level: string) {
    this.log.level = level;
  }

  fatal(...args: unknown[]): void {
    call(this.log.fatal, this.log, args);
  }
  error(...args: unknown[]): void {
    call(this.log.error, this.log, args);
  }
  warn(...args: unknown[]): void {
    call(this.log.warn, this.log, args);
  }
  info(...args: unknown[]): void {
    call(this.log.info, this.log, args);
  }
  debug(...args: unknown[]): void {
    call(this.log.debug, this.log, args);
  }
  trace(...args: unknown[]): void {
    call(this.log.trace, this.log, args);
  }
  silent(...args: unknown[]): void {
    call(this.log.silent, this.log, args);
  }

  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.log.child(bindings, opts);
  }
}

/** The fields of an access line, in the order they are written. */
export interface AccessFields {
  reqId: string;
  method: string;
  route: string | null;
  url: string;
  status: number;
  ms: number;
  user: number | null;
}

const INFO = 30;

/**
 * Writes access lines on `logger`: each the line `logger.info(fields, 'request')` writes, byte for
 * byte, built directly. pino's generic path (a loop over the object's keys with a type check and
 * an escape per value, then its write) was 4 % of a poll's CPU, for the one line every request
 * writes. The level, the base fields (pid, hostname, bindings) and the destination are the
 * logger's own, read at each line. A logger without a pino destination (a stand-in) gets
 * `info()`.
 */
export function accessLineWriter(logger: FastifyBaseLogger): (f: AccessFields) => void {
  const log = logger as Logger;
  const stream = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    { write(line: string): unknown } | undefined;
  if (!stream || typeof stream.write !== 'function') {
    return (f) => logger.info(f, 'request');
  }
  const str = JSON.stringify;
  // Methods and route patterns are few (the routes'): each is quoted once.
  const quoted = new Map<string, string>();
  const quote = (s: string): string => {
    let q = quoted.get(s);
    if (q === undefined) {
      q = str(s);
      if (quoted.size < 10_000) quoted.set(s, q);
    }
    return q;
  };
  return (f) => {
    if (log.levelVal > INFO) return;
    const chindings = (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
    stream.write(
      `{"level":30,"time":${Date.now()}${chindings},"reqId":${str(f.reqId)},"method":${quote(f.method)}` +
        `,"route":${f.route === null ? 'null' : quote(f.route)},"url":${str(f.url)},"status":${f.status}` +
        `,"ms":${f.ms},"user":${f.user === null ? 'null' : f.user},"msg":"request"}\n`,
    );
  };
}
