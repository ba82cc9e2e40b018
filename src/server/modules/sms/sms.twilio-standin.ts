// A local stand-in for the provider's Verify API (v2), for tests: records each request and
// answers as `mode` says. Not used by the server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandinRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  form: Record<string, string>;
}

export type StandinMode = 'ok' | 'fail' | 'rate_limited' | 'down';

export interface TwilioStandin {
  url: string;
  requests: StandinRequest[];
  /** What the next requests get: sends and checks can be set apart. */
  mode: { send: StandinMode; check: StandinMode };
  /** The code the stand-in "sent" to each number (the latest verification). */
  codes: Map<string, string>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c.toString('utf8')));
    req.on('end', () => resolve(s));
  });
}

export async function startTwilioStandin(): Promise<TwilioStandin> {
  const requests: StandinRequest[] = [];
  const codes = new Map<string, string>();
  const bySid = new Map<string, string>();
  const mode: TwilioStandin['mode'] = { send: 'ok', check: 'ok' };
  let n = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    const path = req.url ?? '';
    requests.push({
      method: req.method ?? '',
      path,
      authorization: req.headers.authorization,
      contentType: req.headers['content-type'],
      form,
    });
    const isCheck = path.endsWith('/VerificationCheck');
    const m = isCheck ? mode.check : mode.send;
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (m === 'down') return json(503, { code: 20503, message: 'Service unavailable' });
    if (m === 'rate_limited') return json(429, { code: 20429, message: 'Too many requests' });
    if (m === 'fail') return json(400, { code: 60200, message: 'Invalid parameter: To' });
    if (isCheck) {
      const to = form.VerificationSid ? bySid.get(form.VerificationSid) : form.To;
      if (!to || !codes.has(to)) return json(404, { code: 20404, message: 'not found' });
      const approved = codes.get(to) === form.Code;
      if (approved) codes.delete(to);
      return json(200, { status: approved ? 'approved' : 'pending', to });
    }
    const cancel = /\/Verifications\/([^/]+)$/.exec(path);
    if (cancel) {
      const to = bySid.get(cancel[1]!);
      if (!to) return json(404, { code: 20404, message: 'not found' });
      codes.delete(to);
      bySid.delete(cancel[1]!);
      return json(200, { sid: cancel[1], status: 'canceled' });
    }
    const sid = `VE${String(++n).padStart(32, '0')}`;
    const code = String(100000 + Math.floor(Math.random() * 900000));
    codes.set(form.To!, code);
    bySid.set(sid, form.To!);
    return json(201, { sid, status: 'pending', to: form.To, channel: form.Channel });
  };
  // A failure inside handle() surfaces as an unhandled rejection, which the test runner reports.
  const server: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    mode,
    codes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
