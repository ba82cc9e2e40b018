// The transport of the typed client: one JSON request, the `{error, msg}` error body turned into an
// ApiError, an unreachable server into a NetworkError, and the session fallback
// (docs/api.md, "Authentication"): after a 2FA login the session key is the Bearer; on 404
// "Session expired. Please log in again." or 401 "Invalid user key" the call is repeated once with
// the API key, and the caller is told (so the CLI can forget the dead session).

export const SESSION_EXPIRED_MSG = 'Session expired. Please log in again.';
export const INVALID_KEY_MSG = 'Invalid user key';

/** The server answered with an error (non-2xx, or a 2xx whose body says `success: false`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    msg: string,
    /** The parsed body, when it was JSON. */
    readonly body: unknown,
    /** The body exactly as the server sent it. */
    readonly raw: string,
  ) {
    super(msg);
    this.name = 'ApiError';
  }
}

/** The server could not be reached, or did not answer in time. */
export class NetworkError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = 'NetworkError';
  }
}

export interface HttpOptions {
  /** Base URL, e.g. http://127.0.0.1:8080 (a trailing slash is fine). */
  url: string;
  apiKey?: string | null;
  /** A 2FA session key (`tfa login`); preferred over the API key while it works. */
  sessionKey?: string | null;
  /** Called once when the session key was refused and the API key took over. */
  onSessionFallback?: (reason: string) => void;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Treat a 2xx `{success: false}` as success (callers that inspect per-entry results). */
  allowUnsuccessful?: boolean;
}

export interface RawReply<T> {
  status: number;
  json: T;
  raw: string;
}

export class HttpClient {
  readonly baseUrl: string;
  private sessionKey: string | null;
  /** The body of the last reply exactly as received (`--raw` prints it unchanged). */
  lastRaw = '';
  /** The session cookie the last reply set (`name=value`), if any: for the password sign-in flow. */
  lastCookie: string | null = null;

  constructor(private readonly opts: HttpOptions) {
    this.baseUrl = opts.url.replace(/\/+$/, '');
    this.sessionKey = opts.sessionKey ?? null;
  }

  get usingSession(): boolean {
    return this.sessionKey !== null;
  }

  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    return (await this.requestRaw<T>(method, path, o)).json;
  }

  async requestRaw<T>(method: string, path: string, o: RequestOptions = {}): Promise<RawReply<T>> {
    const bearer = this.sessionKey ?? this.opts.apiKey ?? null;
    let reply = await this.send(method, path, o, bearer);
    if (this.sessionKey !== null && isSessionRefusal(reply.status, reply.json) && this.opts.apiKey) {
      const reason = messageOf(reply.json) ?? 'session refused';
      this.sessionKey = null;
      this.opts.onSessionFallback?.(reason);
      reply = await this.send(method, path, o, this.opts.apiKey);
    }
    this.lastRaw = reply.raw;
    const { status, json, raw } = reply;
    if (status < 200 || status >= 300) {
      throw new ApiError(
        status,
        codeOf(json) ?? `http_${status}`,
        messageOf(json) ?? `HTTP ${status}${raw && json === undefined ? `: ${raw.slice(0, 200)}` : ''}`,
        json,
        raw,
      );
    }
    if (json === undefined) {
      // A 2xx that is not JSON is not this API (a proxy page, a wrong --url).
      if (raw.trim().length > 0)
        throw new ApiError(
          status,
          'bad_response',
          `the server at ${this.baseUrl} did not answer with JSON (is this the openrig API?)`,
          undefined,
          raw,
        );
      return { status, json: {} as T, raw };
    }
    if (!o.allowUnsuccessful && isObject(json) && json.success === false) {
      throw new ApiError(
        status,
        codeOf(json) ?? 'unsuccessful',
        messageOf(json) ?? 'the server reported failure',
        json,
        raw,
      );
    }
    return { status, json: json as T, raw };
  }

  private async send(
    method: string,
    path: string,
    o: RequestOptions,
    bearer: string | null,
  ): Promise<{ status: number; json: unknown; raw: string }> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(o.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', ...(o.headers ?? {}) };
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    let body: string | undefined;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    const f = this.opts.fetch ?? fetch;
    let res: Response;
    try {
      res = await f(url, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new NetworkError(describeFetchError(err, this.baseUrl));
    }
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) this.lastCookie = setCookie.split(';')[0] ?? null;
    let raw: string;
    try {
      raw = await res.text();
    } catch (err) {
      throw new NetworkError(describeFetchError(err, this.baseUrl));
    }
    let json: unknown = undefined;
    if (raw.length > 0) {
      try {
        json = JSON.parse(raw);
      } catch {
        json = undefined;
      }
    }
    return { status: res.status, json, raw };
  }
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function messageOf(json: unknown): string | undefined {
  return isObject(json) && typeof json.msg === 'string' ? json.msg : undefined;
}

function codeOf(json: unknown): string | undefined {
  return isObject(json) && typeof json.error === 'string' ? json.error : undefined;
}

/** Exactly these two answers mean "the session is gone, use the API key". */
export function isSessionRefusal(status: number, json: unknown): boolean {
  const msg = messageOf(json);
  return (status === 404 && msg === SESSION_EXPIRED_MSG) || (status === 401 && msg === INVALID_KEY_MSG);
}

function describeFetchError(err: unknown, base: string): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer from ${base} in time`;
  const why = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
  return `cannot reach the server at ${base} (${why})`;
}
