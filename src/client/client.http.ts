// The transport of the typed client: one JSON request, the `{error, msg}` error body turned into an
// ApiError, an unreachable server into a NetworkError (an ApiError of status 0), and two ways to
// authenticate. With a key (the CLI, the tests) the session fallback applies (docs/api.md,
// "Authentication"): after a 2FA login the session key is the Bearer; on 404 "Session expired.
// Please log in again." or 401 "Invalid user key" the call is repeated once with the API key, and
// the caller is told (so the CLI can forget the dead session). With the browser's session cookie
// (the console) no Authorization header is ever sent, and every write carries the anti-forgery
// header the server requires of cookie-authenticated writes.
// This file runs in the browser as well as in Node: it uses no Node module and no Node global.

export const SESSION_EXPIRED_MSG = 'Session expired. Please log in again.';
export const INVALID_KEY_MSG = 'Invalid user key';

/** The header a cookie-authenticated write carries; a page of another site cannot set it. */
export const CSRF_HEADER = 'x-openrig-csrf';

/** What the console says when the browser cannot reach the server. */
export const UNREACHABLE_MSG = 'The server cannot be reached. Check your connection and retry.';

/**
 * The server answered with an error (non-2xx, or a 2xx whose body says `success: false`), or, as
 * the NetworkError below, did not answer (status 0, code `network`).
 */
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
export class NetworkError extends ApiError {
  constructor(msg: string) {
    super(0, 'network', msg, undefined, '');
    this.name = 'NetworkError';
  }
}

export interface HttpOptions {
  /** Base URL, e.g. http://127.0.0.1:8080 (a trailing slash is fine). */
  url: string;
  /**
   * Authenticate with the browser's session cookie (sent with `credentials: 'same-origin'`)
   * instead of a key: no Authorization header, and every write carries the anti-forgery header.
   * apiKey and sessionKey must then be left out.
   */
  cookieSession?: boolean;
  apiKey?: string | null;
  /** A 2FA session key (`tfa login`); preferred over the API key while it works. */
  sessionKey?: string | null;
  /** Called once when the session key was refused and the API key took over. */
  onSessionFallback?: (reason: string) => void;
  /** How long a request may take; 0 waits as long as the browser or the server allows. */
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
    if (opts.cookieSession && (opts.apiKey || opts.sessionKey))
      throw new Error('a cookie-session client takes no API key or session key');
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
    const bearer = this.opts.cookieSession ? null : (this.sessionKey ?? this.opts.apiKey ?? null);
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
        messageOf(json) ||
          (this.opts.cookieSession
            ? // The console shows the start of a body that is not JSON (a proxy's page), else the status.
              (json === undefined && raw.slice(0, 200)) || `${status} ${reply.statusText}`.trim()
            : `HTTP ${status}${raw && json === undefined ? `: ${raw.slice(0, 200)}` : ''}`),
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
  ): Promise<{ status: number; statusText: string; json: unknown; raw: string }> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(o.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', ...(o.headers ?? {}) };
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (this.opts.cookieSession && method !== 'GET' && method !== 'HEAD') headers[CSRF_HEADER] = '1';
    let body: string | undefined;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    const res = await this.fetchOrFail(url, { method, headers, body });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) this.lastCookie = setCookie.split(';')[0] ?? null;
    let raw: string;
    try {
      raw = await res.text();
    } catch (err) {
      throw new NetworkError(this.describeFetchError(err));
    }
    let json: unknown = undefined;
    if (raw.length > 0) {
      try {
        json = JSON.parse(raw);
      } catch {
        json = undefined;
      }
    }
    return { status: res.status, statusText: res.statusText, json, raw };
  }

  /**
   * Reads a result URL a request answered (logs, a command's output): its status and text, 404
   * while the host has not sent it yet. A cookie-session client reads it on its own origin.
   */
  async readResult(resultUrl: string): Promise<{ status: number; text: string }> {
    const u = new URL(resultUrl, this.baseUrl + '/');
    const url = this.opts.cookieSession ? new URL(u.pathname + u.search, this.baseUrl + '/') : u;
    const res = await this.fetchOrFail(url, { method: 'GET', headers: {} });
    try {
      return { status: res.status, text: await res.text() };
    } catch (err) {
      throw new NetworkError(this.describeFetchError(err));
    }
  }

  private async fetchOrFail(
    url: URL,
    init: { method: string; headers: Record<string, string>; body?: string },
  ): Promise<Response> {
    const f = this.opts.fetch ?? fetch;
    const ms = this.opts.timeoutMs ?? 30_000;
    try {
      return await f(url, {
        ...init,
        ...(this.opts.cookieSession ? { credentials: 'same-origin' as const } : {}),
        ...(ms > 0 ? { signal: AbortSignal.timeout(ms) } : {}),
      });
    } catch (err) {
      throw new NetworkError(this.describeFetchError(err));
    }
  }

  private describeFetchError(err: unknown): string {
    // A browser says nothing of why (no cause): the console gives the reader the next step.
    return this.opts.cookieSession ? UNREACHABLE_MSG : describeFetchError(err, this.baseUrl);
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
