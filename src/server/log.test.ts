// The server log's destination: lines are written asynchronously in batches (a few writes a
// second however many lines), in order, and none is lost by close().
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, write } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import {
  accessLineWriter,
  BatchedOutput,
  FLUSH_MS,
  logOptions,
  RequestLog,
  type AccessFields,
} from './log.js';
import type { FastifyBaseLogger } from 'fastify';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('BatchedOutput', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'openrig-log-'));
  const fds: number[] = [];
  afterEach(() => {
    for (const fd of fds.splice(0)) closeSync(fd);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A destination on a fresh file, counting its writes. */
  function output(name: string, flushMs = FLUSH_MS) {
    const file = path.join(dir, name);
    const fd = openSync(file, 'w');
    fds.push(fd);
    let writes = 0;
    let done = 0;
    const counting = ((...args: unknown[]) => {
      writes++;
      const cb = args.at(-1) as (...r: unknown[]) => void;
      return (write as (...a: unknown[]) => void)(...args.slice(0, -1), (...r: unknown[]) => {
        done++;
        cb(...r);
      });
    }) as typeof write;
    return {
      out: new BatchedOutput(fd, flushMs, counting),
      read: () => readFileSync(file, 'utf8'),
      writes: () => writes,
      /** Writes whose callback has run. */
      done: () => done,
    };
  }

  it('joins a burst of lines into a few writes, in order, all written by close()', async () => {
    const { out, read, writes } = output('burst.log');
    const lines = Array.from({ length: 5000 }, (_, i) => `{"n":${i},"msg":"${'x'.repeat(80)}"}\n`);
    for (const l of lines) out.write(l);
    await out.close();
    expect(read()).toBe(lines.join(''));
    // About 450 KB: one write per 64 KiB queued, not one per line.
    expect(writes()).toBeLessThanOrEqual(10);
  });

  it('writes a trickle of lines a batch at a time, each line within a few flush intervals', async () => {
    const { out, read, writes } = output('trickle.log');
    out.write('first\n');
    // Not written by the call itself: the write waits for the others of its batch.
    expect(read()).toBe('');
    await sleep(FLUSH_MS * 5);
    expect(read()).toBe('first\n');
    // 100 lines a millisecond or more apart (one per request of a server at ~1,000 req/s).
    const started = Date.now();
    let n = 0;
    while (n < 100) {
      out.write(`line ${n++}\n`);
      await sleep(1);
    }
    const batches = Math.ceil((Date.now() - started) / FLUSH_MS) + 2;
    await sleep(FLUSH_MS * 5);
    expect(read().split('\n').filter(Boolean)).toHaveLength(101);
    expect(writes()).toBeLessThanOrEqual(1 + batches);
    expect(writes()).toBeLessThan(50);
    await out.close();
  });

  it('with a flush interval of 0 writes each line as soon as no write is in flight', async () => {
    const { out, read, writes, done } = output('immediate.log', 0);
    for (let n = 0; n < 20; n++) {
      // Each line comes once the previous write is done (however slow a loaded machine is), so
      // no write is in flight: it must go out at once, alone, in the write() call itself.
      for (let waited = 0; done() < n && waited < 2000; waited += 1) await sleep(1);
      out.write(`line ${n}\n`);
      expect(writes()).toBe(n + 1);
    }
    await out.close();
    expect(read().split('\n').filter(Boolean)).toHaveLength(20);
    // One write a line: each was out before the next came.
    expect(writes()).toBe(20);
  });

  it('after close() writes each further line at once', async () => {
    const { out, read } = output('closed.log');
    out.write('a\n');
    await out.close();
    out.write('b\n');
    expect(read()).toBe('a\nb\n');
  });
});

describe('RequestLog', () => {
  it('makes the child logger on the first line, once, and logs through it', () => {
    const lines: string[] = [];
    const parent = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    let children = 0;
    const child = parent.child.bind(parent);
    parent.child = ((...a: Parameters<typeof child>) => {
      children++;
      return child(...a);
    }) as typeof parent.child;
    const log = new RequestLog(parent, { reqId: 'r-1' }, {});
    expect(log.level).toBe('info');
    log.debug('not at info');
    expect(children).toBe(1);
    log.warn({ n: 1 }, 'first');
    log.info('second');
    expect(children).toBe(1);
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { level: 40, reqId: 'r-1', n: 1, msg: 'first' },
      { level: 30, reqId: 'r-1', msg: 'second' },
    ]);
    const unused = new RequestLog(parent, { reqId: 'r-2' }, {});
    expect(unused.level).toBe('info');
    expect(children).toBe(1);
  });
});

describe('accessLineWriter', () => {
  /** A logger as the server makes it (logOptions), writing into an array. */
  function capture(level = 'info') {
    const lines: string[] = [];
    const log = pino(logOptions(level), { write: (l: string) => void lines.push(l) });
    return { log, lines };
  }
  // pino writes the time it reads; both lines are compared with it set to the same value.
  const sameTime = (l: string) => l.replace(/^\{"level":30,"time":\d+,/, '{"level":30,"time":0,');

  const cases: AccessFields[] = [
    {
      reqId: 'c0a8d3e4-1b2c-4d5e-8f90-0123456789ab',
      method: 'GET',
      route: '/api/v0/instances/:id',
      url: '/api/v0/instances/7/',
      status: 200,
      ms: 1.27,
      user: 42,
    },
    { reqId: 'x', method: 'GET', route: null, url: '/nope', status: 404, ms: 0.5, user: null },
    {
      reqId: 'y',
      method: 'POST',
      route: '/api/v0/bundles/',
      url: '/a?q="quoted"&b=back\\slash&c=\u0001ctl&d=\u00e9t\u00e9&e=\u{1f680}&f=' + 'x'.repeat(150),
      status: 400,
      ms: 12,
      user: 0,
    },
  ];

  it('writes the line info() writes, byte for byte but the time', () => {
    for (const f of cases) {
      const a = capture();
      const b = capture();
      a.log.info(f, 'request');
      accessLineWriter(b.log)(f);
      expect(b.lines).toHaveLength(1);
      expect(sameTime(b.lines[0]!)).toBe(sameTime(a.lines[0]!));
      expect(JSON.parse(b.lines[0]!)).toMatchObject({ ...f, msg: 'request', pid: process.pid });
    }
  });

  it("carries a child logger's bindings and follows the logger's level", () => {
    const a = capture();
    const b = capture();
    accessLineWriter(b.log.child({ worker: 2 }))(cases[0]!);
    a.log.child({ worker: 2 }).info(cases[0]!, 'request');
    expect(sameTime(b.lines[0]!)).toBe(sameTime(a.lines[0]!));
    const quiet = capture('warn');
    const write = accessLineWriter(quiet.log);
    write(cases[0]!);
    expect(quiet.lines).toHaveLength(0);
    quiet.log.level = 'info';
    write(cases[0]!);
    expect(quiet.lines).toHaveLength(1);
  });

  it('uses info() on a logger that is not pino', () => {
    const seen: unknown[][] = [];
    const standIn = { info: (...a: unknown[]) => void seen.push(a) } as unknown as FastifyBaseLogger;
    accessLineWriter(standIn)(cases[1]!);
    expect(seen).toEqual([[cases[1], 'request']]);
  });
});
