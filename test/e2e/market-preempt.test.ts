// The market end to end: a real `serve`, a real `openrig agent` on the process runtime. Renter A
// bids on the machine; renter B rents it on demand: A gets SIGTERM, keeps running through the grace
// period (OPENRIG_PREEMPT_GRACE_S, 7 s here), is stopped with its files kept, and only then does
// B start. B destroyed, A resumes by itself with its files intact. A's webhook gets
// instance.preempted and instance.resumed, and A is e-mailed both times.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { callApi, waitFor } from '../helpers/process.js';
import { createUser, startAgentWorld, type AgentWorld } from './cli-harness.js';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver.js';
import { PUB2 } from '../helpers/market.js';

// Above the process runtime's own stop grace (5 s): B starting no sooner shows the agent got the
// grace from the server.
const GRACE_S = 7;
const ENV = {
  OPENRIG_SECRET_KEY: '6e'.repeat(32),
  OPENRIG_HEARTBEAT_S: '0.5',
  OPENRIG_PREEMPT_GRACE_S: String(GRACE_S),
  OPENRIG_WEBHOOK_ALLOW_HTTP: '1',
  OPENRIG_WEBHOOK_ALLOW_HOSTS: '127.0.0.1/32',
  OPENRIG_WEBHOOK_POLL_MS: '50',
  OPENRIG_MAIL_RELAY_INTERVAL_MS: '100',
};

// The instance's onstart: notes each start and each SIGTERM with the time (seconds), keeps a
// file it wrote on its first start, and runs on through SIGTERM (the agent kills it at the grace's end).
const ONSTART = [
  `trap 'echo "term $(date +%s.%N)" >> events.txt' TERM`,
  'echo "start $(date +%s.%N)" >> events.txt',
  '[ -f keep.txt ] || echo "written on the first start" > keep.txt',
  'while true; do sleep 0.2; done',
].join('\n');

let w: AgentWorld;
let rx: Receiver;
let bKey: string;
let a: number;
let b: number;

const file = (id: number, name: string) => path.join(w.stateDir, 'instances', String(id), 'root', name);
const read = (id: number, name: string) =>
  existsSync(file(id, name)) ? readFileSync(file(id, name), 'utf8') : '';
const events = (id: number) =>
  read(id, 'events.txt')
    .split('\n')
    .filter(Boolean)
    .map((l) => ({ kind: l.split(' ')[0]!, at: Number(l.split(' ')[1]) }));
const show = async (key: string, id: number) =>
  (await callApi(w.url, 'GET', `/api/v0/instances/${id}/`, key)).body.instances as Record<string, unknown>;
const mails = () => {
  const f = path.join(w.data, 'mail-outbox.jsonl');
  return existsSync(f)
    ? readFileSync(f, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { to: string; subject: string; text: string })
    : [];
};
async function until<T>(
  fn: () => Promise<T> | T,
  ok: (v: T) => boolean,
  what: string,
  ms = 30_000,
): Promise<T> {
  let last: T | undefined;
  try {
    return (
      await waitFor(
        async () => {
          last = await fn();
          return ok(last) ? { v: last } : null;
        },
        what,
        ms,
        100,
      )
    ).v;
  } catch (err) {
    throw new Error(
      `${(err as Error).message}; last ${JSON.stringify(last)}; agent: ${w.agent.stdout()}${w.agent.stderr()}`,
    );
  }
}

beforeAll(async () => {
  rx = await startReceiver();
  w = await startAgentWorld({
    env: ENV,
    host: 'mk-host@example.com',
    renter: 'mk-a@example.com',
    agentEnv: { OPENRIG_LOG_LEVEL: 'info' },
  });
  bKey = (await createUser(w, 'mk-b@example.com')).api_key;
  expect((await callApi(w.url, 'POST', '/api/v0/ssh/', bKey, { ssh_key: PUB2 })).status).toBe(200);
  // The host takes bids from 0.1 $/h per GPU.
  expect(
    (await callApi(w.url, 'PUT', `/api/v0/machines/${w.machine}/minbid/`, w.hostKey, { price: 0.1 })).status,
  ).toBe(200);
  const hook = await callApi(w.url, 'POST', '/api/v0/webhooks/', w.renterKey, {
    url: `${rx.url}/a`,
    events: ['instance.preempted', 'instance.resumed'],
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
}, 120_000);

afterAll(async () => {
  w?.stop();
  await rx?.close();
});

describe('preemption with a real agent', { timeout: 120_000 }, () => {
  it('A bids and runs; B rents on demand: A gets SIGTERM, its grace, then stops; B starts after it', async () => {
    const r = await callApi(w.url, 'PUT', `/api/v0/asks/${w.machine}/`, w.renterKey, {
      client_id: 'me',
      image: 'ubuntu:22.04',
      disk: 1,
      onstart: ONSTART,
      price: 0.2,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ is_bid: true, price: 0.2, bid_waiting: false });
    a = r.body.new_contract as number;
    await until(
      () => show(w.renterKey, a),
      (i) => i.actual_status === 'running',
      'A running',
    );
    await until(
      () => events(a),
      (e) => e.some((x) => x.kind === 'start'),
      "A's onstart",
    );

    const rb = await callApi(w.url, 'PUT', `/api/v0/asks/${w.machine}/`, bKey, {
      client_id: 'me',
      image: 'ubuntu:22.04',
      disk: 1,
      onstart: ONSTART,
    });
    expect(rb.status, JSON.stringify(rb.body)).toBe(200);
    expect(rb.body).toMatchObject({ is_bid: false, price: null });
    b = rb.body.new_contract as number;
    const pa = await show(w.renterKey, a);
    expect(pa).toMatchObject({ intended_status: 'stopped', bid_waiting: true, preempted_by: 'on-demand' });
    expect(pa.actual_status).not.toBe('running');
    expect(String(pa.status_msg)).toContain('outbid by an on-demand rental');

    await until(
      () => show(bKey, b),
      (i) => i.actual_status === 'running',
      'B running',
    );
    const ea = events(a);
    const term = ea.find((x) => x.kind === 'term');
    expect(term, 'A saw SIGTERM').toBeDefined();
    const bStart = await until(
      () => events(b),
      (e) => e.some((x) => x.kind === 'start'),
      "B's onstart",
    );
    // B started only after A's grace period: A ran on through SIGTERM until the agent stopped it.
    expect(bStart[0]!.at - term!.at).toBeGreaterThanOrEqual(GRACE_S - 0.5);
    expect(read(a, 'keep.txt')).toBe('written on the first start\n');
  });

  it('B destroyed: A resumes by itself with its files intact; webhooks and e-mails say so', async () => {
    expect((await callApi(w.url, 'DELETE', `/api/v0/instances/${b}/`, bKey)).status).toBe(200);
    const ra = await until(
      () => show(w.renterKey, a),
      (i) => i.actual_status === 'running',
      'A resumed and running',
    );
    expect(ra).toMatchObject({ intended_status: 'running', bid_waiting: false, is_bid: true, dph_base: 0.2 });
    await until(
      () => events(a),
      (e) => e.filter((x) => x.kind === 'start').length === 2,
      "A's second start",
    );
    expect(read(a, 'keep.txt')).toBe('written on the first start\n');
    const got = await until(
      () => rx.received.map((x) => JSON.parse(x.body) as { type: string; data: Record<string, unknown> }),
      (l) => l.some((e) => e.type === 'instance.resumed'),
      'the webhook deliveries',
    );
    const pre = got.find((e) => e.type === 'instance.preempted');
    expect(pre?.data).toMatchObject({ instance_id: a, preempted_by: 'on-demand', grace_s: GRACE_S });
    expect(got.find((e) => e.type === 'instance.resumed')?.data).toMatchObject({ instance_id: a });
    const m = await until(
      mails,
      (l) =>
        l.filter((x) => x.to === 'mk-a@example.com' && /Instance \d+ (was preempted|resumed)/.test(x.subject))
          .length >= 2,
      "A's e-mails",
    );
    const mine = m.filter((x) => x.to === 'mk-a@example.com');
    expect(mine.some((x) => x.subject.startsWith(`Instance ${a} was preempted`))).toBe(true);
    expect(mine.some((x) => x.subject.startsWith(`Instance ${a} resumed`))).toBe(true);
  });
});
