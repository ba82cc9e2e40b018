// Configuration is parsed once, typed and validated at start, then passed in.
// Every variable is listed in .env.example with its default; the names of the timing variables
// are part of the operator interface and stay stable.
import { isIP } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { oidcConfig, type OidcConfig } from './config.oidc.js';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** `sqlite:PATH` or `postgres://…` */
  databaseUrl: string;
  logLevel: string;
  /** Log lines wait at most this long to be written together (0: each as soon as possible). */
  logFlushMs: number;
  /** 32-byte key (AES-256-GCM for TOTP secrets, HMAC for backup codes). */
  secretKey: Buffer;
  publicHost: string;
  sessionTtlS: number;
  bodyLimitBytes: number;
  mail: {
    smtpUrl: string | null;
    outboxFile: string | null;
    from: string;
    relayIntervalMs: number;
    maxAttempts: number;
  };
  sms: {
    provider: 'outbox' | 'twilio';
    outboxFile: string;
    twilio: { accountSid: string; authToken: string; verifyServiceSid: string; apiBase: string };
    /** Per user, per rolling window (abuse controls). */
    perUserLimit: number;
    perNumberLimit: number;
    windowS: number;
    resendAfterS: number;
    preauthPhoneCap: number;
    preauthPhoneWindowS: number;
    blockedPrefixes: string[];
  };
  tfa: {
    challengeTtlS: number;
    authorizationTtlS: number;
    lockoutS: number;
    maxFailures: number;
    challengeMaxTries: number;
  };
  /** Per-account sign-in lockout across passwords and every 2FA method (accounts.lockout.ts). */
  accountLockout: { maxFailures: number; windowS: number; baseLockS: number; maxLockS: number };
  /** Account basics an operator switches on (accounts.tokens.ts). */
  accounts: {
    /** OPENRIG_SIGNUP: anyone may sign up (with e-mail verification); off: an operator creates accounts. */
    signup: boolean;
    /** OPENRIG_PASSWORD_RESET_TTL_S: the life of a password reset or sign-up link. */
    tokenTtlS: number;
    /** OPENRIG_PUBLIC_URL: the console's address in e-mailed links (never taken from a request's Host). */
    publicUrl: string;
    /** OPENRIG_CREDIT_HELP: what a renter with no credit is told about getting some here. */
    creditHelp: string;
  };
  agent: {
    heartbeatS: number;
    unknownAfterS: number;
    offlineAfterS: number;
    sweepIntervalMs: number;
    /** OPENRIG_AUTO_VERIFY on: machines agents register are verified (one operator trusts its hosts). */
    autoVerify?: boolean;
    /**
     * OPENRIG_VERIFICATION_RULE: the operator's words for how a host's unverified machine becomes
     * verified (shown to hosts by the agent, `list machine` and the console).
     */
    verificationRule: string;
    /** The agent's benchmarks and the verification that follows them (docs/benchmarks.md, docs/trust.md). */
    benchmarks?: {
      /** OPENRIG_BENCH_VERIFY (on): a machine whose benchmarks match its GPU model's reference is verified. */
      autoVerify: boolean;
      /** OPENRIG_BENCH_TOLERANCE (0.25): how far below the reference a figure may be, as a fraction. */
      tolerance: number;
      /** OPENRIG_VERIFY_AFTER_S (86400): how long a machine must have been online before it is verified. */
      onlineS: number;
      /** OPENRIG_BENCH_INTERVAL_S (86400): how often agents run their benchmarks again. */
      intervalS: number;
      /**
       * OPENRIG_DEVERIFY_FAILED_STARTS (3): this many starts in a row on a verified machine that
       * never reached running deverify it; 0 turns the rule off.
       */
      failedStarts?: number;
    };
  };
  billing: {
    meterIntervalMs: number;
    /**
     * OPENRIG_PREPAY_DISCOUNTS: the discount of a prepaid (reserved) instance by the months its
     * deposit covers, thresholds ascending; the rate of the highest threshold reached applies.
     */
    prepayDiscounts: PrepayDiscount[];
    /** OPENRIG_PLATFORM_FEE_PERCENT: the platform's share of what renters pay, kept from payouts. */
    platformFeePercent: number;
    /** OPENRIG_PAYOUT_MIN_USD: a host's earnings below this roll over to the next payout. */
    payoutMinUsd: number;
    /**
     * OPENRIG_PAYOUT_PERIOD_DAYS: payouts cover periods this long, counted from Monday 1970-01-05
     * 00:00 UTC (whole days end at UTC midnight; a fraction, down to one second, is allowed).
     */
    payoutPeriodDays: number;
  };
  /** The market: seconds a preempted interruptible instance gets between SIGTERM and its stop. */
  market: { preemptGraceS: number };
  /** The audit log and login addresses (modules/audit): rows older than this are deleted. */
  audit: { retentionDays: number };
  rateLimits: { enabled: boolean } & Record<RateLimitFamily, RateLimitRule>;
  /**
   * Bearer token of GET /metrics. Without one, the API port does not serve /metrics at all; a
   * separate metrics listener (metricsPort) serves it to whoever can reach that port.
   */
  metricsToken: string | null;
  /** Port of the separate /metrics listener (`--metrics-port`, OPENRIG_METRICS_PORT); null: none. */
  metricsPort: number | null;
  /** Address of that listener (OPENRIG_METRICS_HOST, default 127.0.0.1). */
  metricsHost: string;
  /**
   * Proxies whose X-Forwarded-For is believed (OPENRIG_TRUST_PROXY): false (the default: the
   * socket's address is the client's), or the proxies' addresses and CIDR ranges.
   */
  trustProxy: false | string[];
  /** Single sign-on: OPENRIG_OIDC_PROVIDERS (or _FILE) and the sign-in's life (config.oidc.ts). */
  oidc: OidcConfig;
  /** The HTTPS gateway to instance ports (modules/gateway, docs/gateway.md). */
  gateway: {
    /** OPENRIG_GATEWAY_DOMAIN: instance ports are also served at `ID-PORT.DOMAIN` (by Host); null: paths only. */
    domain: string | null;
    /** OPENRIG_GATEWAY_IDLE_TIMEOUT_S: a gateway stream with no byte either way for this long is closed; 0: never. */
    idleTimeoutS: number;
    /** OPENRIG_GATEWAY_LINK_TTL_S: the life of a signed gateway link (`?openrig_token=`). */
    linkTtlS: number;
    /** OPENRIG_GATEWAY_COOKIE_TTL_S: the life of the cookie a signed link sets. */
    cookieTtlS: number;
    /** OPENRIG_GATEWAY_OPEN_TIMEOUT_S: how long a request waits for the instance's agent to open its tunnel. */
    openTimeoutS: number;
    /** OPENRIG_GATEWAY_NODE_URL: where agents reach this very process (several nodes behind one address); null: the server URL they use. */
    nodeUrl: string | null;
  };
  webhooks: {
    /** OPENRIG_WEBHOOK_ALLOW_HTTP on: http:// endpoint URLs are accepted (else https:// only). */
    allowHttp: boolean;
    /** OPENRIG_WEBHOOK_ALLOW_HOSTS: CIDR ranges deliveries may reach although private or loopback. */
    allowHosts: string[];
    /** How often the dispatcher looks for due deliveries. */
    pollMs: number;
  };
}

/** From `months` of prepaid cost on, a prepaid instance's charges are `rate` (a fraction) cheaper. */
export interface PrepayDiscount {
  months: number;
  rate: number;
}

/** OPENRIG_PREPAY_DISCOUNTS' default: 5 % from a month, 10 % from 3, 15 % from 6, 20 % from 12. */
export const DEFAULT_PREPAY_DISCOUNTS = '1:5,3:10,6:15,12:20';
/** The largest discount a schedule may give, in percent: a deposit always pays something. */
export const MAX_PREPAY_DISCOUNT_PERCENT = 90;

/**
 * OPENRIG_PREPAY_DISCOUNTS: `MONTHS:PERCENT,…` with months ascending and above 0, percents from 0
 * to MAX_PREPAY_DISCOUNT_PERCENT and never falling (a discount grows with the months prepaid);
 * `none` for no discount at all.
 */
export function prepayDiscounts(env: Env): PrepayDiscount[] {
  const raw = str(env, 'OPENRIG_PREPAY_DISCOUNTS', DEFAULT_PREPAY_DISCOUNTS).trim();
  if (raw.toLowerCase() === 'none') return [];
  const fail = (why: string) =>
    new Error(
      `OPENRIG_PREPAY_DISCOUNTS must be MONTHS:PERCENT pairs, e.g. ${DEFAULT_PREPAY_DISCOUNTS}, or none: ${why} (got ${JSON.stringify(raw)})`,
    );
  const out: PrepayDiscount[] = [];
  for (const part of raw.split(',')) {
    const m = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    if (!m) throw fail(`${JSON.stringify(part)} is not MONTHS:PERCENT`);
    const months = Number(m[1]);
    const percent = Number(m[2]);
    if (months <= 0) throw fail('months must be above 0');
    if (percent > MAX_PREPAY_DISCOUNT_PERCENT)
      throw fail(`a discount is at most ${MAX_PREPAY_DISCOUNT_PERCENT} %`);
    const prev = out[out.length - 1];
    if (prev && months <= prev.months) throw fail('months must be ascending');
    if (prev && percent / 100 < prev.rate) throw fail('a discount never falls as the months grow');
    out.push({ months, rate: percent / 100 });
  }
  return out;
}

/** Route families with their own fixed-window limit (platform/platform.rate-limit.ts). */
export type RateLimitFamily = 'codeSends' | 'logins' | 'creates' | 'search';
/** At most `limit` requests per `windowS` seconds, per account (or per IP when anonymous). */
export interface RateLimitRule {
  limit: number;
  windowS: number;
}

type Env = Record<string, string | undefined>;

function num(env: Env, name: string, def: number, opts: { min?: number; max?: number } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  const { min, max } = opts;
  if (!Number.isFinite(n) || (min !== undefined && n < min) || (max !== undefined && n > max)) {
    const range = [min !== undefined ? `>= ${min}` : '', max !== undefined ? `<= ${max}` : '']
      .filter(Boolean)
      .join(' and ');
    throw new Error(`${name} must be a number${range ? ` ${range}` : ''} (got ${JSON.stringify(raw)})`);
  }
  return n;
}

function str(env: Env, name: string, def: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? def : raw;
}

/** The values a boolean variable takes, in any case: on (1, true, on) or off (0, false, off). */
const BOOL_ON = ['1', 'true', 'on'];
const BOOL_OFF = ['0', 'false', 'off'];

/** A boolean variable: unset or empty gives `def`; any value outside BOOL_ON and BOOL_OFF is refused. */
function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return def;
  const v = raw.trim().toLowerCase();
  if (BOOL_ON.includes(v)) return true;
  if (BOOL_OFF.includes(v)) return false;
  throw new Error(
    `${name} must be one of ${[...BOOL_ON, ...BOOL_OFF].join(', ')} (got ${JSON.stringify(raw)})`,
  );
}

/** Levels OPENRIG_LOG_LEVEL takes: pino's. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** OPENRIG_LOG_LEVEL, checked (the server's and the agent's). */
export function logLevel(env: Env): string {
  const raw = str(env, 'OPENRIG_LOG_LEVEL', 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(raw))
    throw new Error(`OPENRIG_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(raw)})`);
  return raw;
}

/**
 * SMTP_URL: empty (no SMTP), or `smtp://[USER:PASS@]HOST[:PORT][?OPTIONS]` (smtps:// for TLS from
 * the start) with a host. The message never quotes the value: it may hold a password.
 */
function smtpUrl(env: Env): string | null {
  const raw = env.SMTP_URL;
  if (raw === undefined || raw === '') return null;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || url.hostname === '')
    throw new Error(
      'SMTP_URL must be smtp://[USER:PASS@]HOST[:PORT] or smtps://…, or empty for no SMTP (the value is not shown: it may hold a password)',
    );
  return raw;
}

/**
 * The SMS provider: outbox, or twilio with its account SID, auth token and Verify service SID
 * (without them every code send would fail) and an http(s) API base.
 */
function smsProvider(env: Env): 'outbox' | 'twilio' {
  const provider = str(env, 'OPENRIG_SMS_PROVIDER', 'outbox');
  if (provider !== 'outbox' && provider !== 'twilio')
    throw new Error(`OPENRIG_SMS_PROVIDER must be outbox or twilio (got ${JSON.stringify(provider)})`);
  if (provider === 'twilio') {
    const missing = ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_VERIFY_SERVICE_SID'].filter(
      (name) => !env[name],
    );
    if (missing.length > 0)
      throw new Error(`OPENRIG_SMS_PROVIDER=twilio needs ${missing.join(', ')} (not set)`);
    const base = env.TWILIO_API_BASE;
    if (base && !/^https?:\/\/[^/\s]+/.test(base))
      throw new Error(`TWILIO_API_BASE must be an http:// or https:// URL (got ${JSON.stringify(base)})`);
  }
  return provider;
}

/** `LIMIT/WINDOW_SECONDS`, e.g. `120/60`. */
function rateRule(env: Env, name: string, def: RateLimitRule): RateLimitRule {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(raw);
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1)
    throw new Error(`${name} must be LIMIT/WINDOW_SECONDS, e.g. 120/60 (got ${JSON.stringify(raw)})`);
  return { limit: Number(m[1]), windowS: Number(m[2]) };
}

/** Reads OPENRIG_SECRET_KEY, or the key generated into the data dir on first start. */
export function loadSecretKey(env: Env, dataDir: string): Buffer {
  const raw = env.OPENRIG_SECRET_KEY;
  if (raw) {
    const buf = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
    if (buf.length !== 32) throw new Error('OPENRIG_SECRET_KEY must be 32 bytes, as 64 hex digits or base64');
    return buf;
  }
  const file = path.join(dataDir, 'secret.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    return key;
  } catch {
    // Another process created it first: use theirs.
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  }
}

export interface ConfigOverrides {
  host?: string;
  port?: number;
  dataDir?: string;
  databaseUrl?: string;
  metricsPort?: number;
}

export function loadConfig(env: Env = process.env, o: ConfigOverrides = {}): Config {
  const dataDir = path.resolve(o.dataDir ?? str(env, 'OPENRIG_DATA', './data'));
  const databaseUrl = o.databaseUrl ?? (env.DATABASE_URL || `sqlite:${path.join(dataDir, 'openrig.db')}`);
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) {
    throw new Error(
      `database URL must start with sqlite: or postgres:// (got ${JSON.stringify(databaseUrl)})`,
    );
  }
  const provider = smsProvider(env);
  const smtp = smtpUrl(env);
  const outboxFile = env.OPENRIG_MAIL_OUTBOX || (smtp ? null : path.join(dataDir, 'mail-outbox.jsonl'));
  const host = o.host ?? str(env, 'OPENRIG_HOST', '127.0.0.1');
  return {
    host,
    port: o.port ?? num(env, 'OPENRIG_PORT', 8080, { min: 0, max: 65535 }),
    dataDir,
    databaseUrl,
    logLevel: logLevel(env),
    logFlushMs: num(env, 'OPENRIG_LOG_FLUSH_MS', 20, { min: 0, max: 60_000 }),
    secretKey: loadSecretKey(env, dataDir),
    publicHost: str(env, 'OPENRIG_PUBLIC_HOST', host === '0.0.0.0' ? '127.0.0.1' : host),
    sessionTtlS: num(env, 'OPENRIG_SESSION_TTL_S', 7 * 24 * 3600, { min: 1 }),
    bodyLimitBytes: num(env, 'OPENRIG_BODY_LIMIT_BYTES', 1024 * 1024, { min: 1024 }),
    mail: {
      smtpUrl: smtp,
      outboxFile,
      from: str(env, 'OPENRIG_MAIL_FROM', 'openrig <noreply@openrig.local>'),
      relayIntervalMs: num(env, 'OPENRIG_MAIL_RELAY_INTERVAL_MS', 500, { min: 10 }),
      maxAttempts: num(env, 'OPENRIG_MAIL_MAX_ATTEMPTS', 8, { min: 1 }),
    },
    sms: {
      provider,
      outboxFile: str(env, 'OPENRIG_SMS_OUTBOX', path.join(dataDir, 'sms-outbox.jsonl')),
      twilio: {
        accountSid: str(env, 'TWILIO_ACCOUNT_SID', ''),
        authToken: str(env, 'TWILIO_AUTH_TOKEN', ''),
        verifyServiceSid: str(env, 'TWILIO_VERIFY_SERVICE_SID', ''),
        apiBase: str(env, 'TWILIO_API_BASE', 'https://verify.twilio.com'),
      },
      perUserLimit: num(env, 'OPENRIG_SMS_PER_USER_LIMIT', 5, { min: 1 }),
      perNumberLimit: num(env, 'OPENRIG_SMS_PER_NUMBER_LIMIT', 5, { min: 1 }),
      windowS: num(env, 'OPENRIG_SMS_WINDOW_S', 3600, { min: 1 }),
      resendAfterS: num(env, 'OPENRIG_SMS_RESEND_AFTER_S', 60, { min: 0 }),
      preauthPhoneCap: num(env, 'OPENRIG_SMS_PREAUTH_PHONE_CAP', 3, { min: 1 }),
      preauthPhoneWindowS: num(env, 'OPENRIG_SMS_PREAUTH_PHONE_WINDOW_S', 86400, { min: 1 }),
      blockedPrefixes: str(env, 'OPENRIG_SMS_BLOCKED_PREFIXES', '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    tfa: {
      challengeTtlS: num(env, 'OPENRIG_TFA_CHALLENGE_TTL_S', 600, { min: 1 }),
      authorizationTtlS: num(env, 'OPENRIG_TFA_AUTHORIZATION_TTL_S', 1800, { min: 1 }),
      lockoutS: num(env, 'OPENRIG_TFA_LOCKOUT_S', 900, { min: 1 }),
      maxFailures: num(env, 'OPENRIG_TFA_MAX_FAILURES', 5, { min: 1 }),
      challengeMaxTries: num(env, 'OPENRIG_TFA_CHALLENGE_MAX_TRIES', 5, { min: 1 }),
    },
    accounts: {
      signup: bool(env, 'OPENRIG_SIGNUP', false),
      tokenTtlS: num(env, 'OPENRIG_PASSWORD_RESET_TTL_S', 3600, { min: 60, max: 7 * 86_400 }),
      publicUrl: publicUrl(env, host, o.port ?? num(env, 'OPENRIG_PORT', 8080, { min: 0, max: 65535 })),
      creditHelp: str(
        env,
        'OPENRIG_CREDIT_HELP',
        'Ask the operator of this installation to add credit to your account.',
      ),
    },
    accountLockout: {
      maxFailures: num(env, 'OPENRIG_ACCOUNT_MAX_FAILURES', 10, { min: 1 }),
      windowS: num(env, 'OPENRIG_ACCOUNT_FAILURE_WINDOW_S', 3600, { min: 1 }),
      baseLockS: num(env, 'OPENRIG_ACCOUNT_LOCKOUT_S', 900, { min: 1 }),
      maxLockS: num(env, 'OPENRIG_ACCOUNT_MAX_LOCKOUT_S', 86400, { min: 1 }),
    },
    agent: {
      heartbeatS: num(env, 'OPENRIG_HEARTBEAT_S', 10, { min: 0.1 }),
      unknownAfterS: num(env, 'OPENRIG_UNKNOWN_AFTER_S', 60, { min: 0.1 }),
      offlineAfterS: num(env, 'OPENRIG_OFFLINE_AFTER_S', 300, { min: 0.1 }),
      sweepIntervalMs: num(env, 'OPENRIG_SWEEP_INTERVAL_MS', 1000, { min: 10 }),
      autoVerify: bool(env, 'OPENRIG_AUTO_VERIFY', false),
      verificationRule: str(
        env,
        'OPENRIG_VERIFICATION_RULE',
        bool(env, 'OPENRIG_AUTO_VERIFY', false)
          ? 'machines are verified when their agent registers them (OPENRIG_AUTO_VERIFY)'
          : 'an operator of this installation verifies it (openrig admin verify-machine --id ID) after checking the host',
      ),
      benchmarks: {
        autoVerify: bool(env, 'OPENRIG_BENCH_VERIFY', true),
        tolerance: num(env, 'OPENRIG_BENCH_TOLERANCE', 0.25, { min: 0, max: 1 }),
        onlineS: num(env, 'OPENRIG_VERIFY_AFTER_S', 86400, { min: 0 }),
        intervalS: num(env, 'OPENRIG_BENCH_INTERVAL_S', 86400, { min: 60 }),
        failedStarts: Math.floor(num(env, 'OPENRIG_DEVERIFY_FAILED_STARTS', 3, { min: 0, max: 1000 })),
      },
    },
    billing: {
      meterIntervalMs: num(env, 'OPENRIG_METER_INTERVAL_MS', 10_000, { min: 10 }),
      prepayDiscounts: prepayDiscounts(env),
      platformFeePercent: num(env, 'OPENRIG_PLATFORM_FEE_PERCENT', 0, { min: 0, max: 100 }),
      payoutMinUsd: num(env, 'OPENRIG_PAYOUT_MIN_USD', 10, { min: 0 }),
      payoutPeriodDays: num(env, 'OPENRIG_PAYOUT_PERIOD_DAYS', 7, { min: 1 / 86_400, max: 366 }),
    },
    market: { preemptGraceS: num(env, 'OPENRIG_PREEMPT_GRACE_S', 30, { min: 0, max: 3600 }) },
    audit: { retentionDays: num(env, 'OPENRIG_AUDIT_RETENTION_DAYS', 90, { min: 1, max: 36_500 }) },
    rateLimits: {
      enabled: bool(env, 'OPENRIG_RATE_LIMITS', true),
      codeSends: rateRule(env, 'OPENRIG_RATE_LIMIT_CODE_SENDS', { limit: 10, windowS: 600 }),
      logins: rateRule(env, 'OPENRIG_RATE_LIMIT_LOGINS', { limit: 20, windowS: 60 }),
      creates: rateRule(env, 'OPENRIG_RATE_LIMIT_CREATES', { limit: 30, windowS: 60 }),
      search: rateRule(env, 'OPENRIG_RATE_LIMIT_SEARCH', { limit: 120, windowS: 60 }),
    },
    metricsToken: env.OPENRIG_METRICS_TOKEN || null,
    metricsPort:
      o.metricsPort ??
      (env.OPENRIG_METRICS_PORT ? num(env, 'OPENRIG_METRICS_PORT', 0, { min: 0, max: 65535 }) : null),
    metricsHost: str(env, 'OPENRIG_METRICS_HOST', '127.0.0.1'),
    trustProxy: trustProxy(env),
    oidc: oidcConfig(env),
    gateway: {
      domain: gatewayDomain(env),
      idleTimeoutS: num(env, 'OPENRIG_GATEWAY_IDLE_TIMEOUT_S', 0, { min: 0 }),
      linkTtlS: num(env, 'OPENRIG_GATEWAY_LINK_TTL_S', 3600, { min: 10, max: 30 * 86_400 }),
      cookieTtlS: num(env, 'OPENRIG_GATEWAY_COOKIE_TTL_S', 12 * 3600, { min: 60, max: 30 * 86_400 }),
      openTimeoutS: num(env, 'OPENRIG_GATEWAY_OPEN_TIMEOUT_S', 15, { min: 1, max: 600 }),
      nodeUrl: env.OPENRIG_GATEWAY_NODE_URL ? env.OPENRIG_GATEWAY_NODE_URL.replace(/\/+$/, '') : null,
    },
    webhooks: {
      allowHttp: bool(env, 'OPENRIG_WEBHOOK_ALLOW_HTTP', false),
      allowHosts: webhookAllowHosts(env),
      pollMs: num(env, 'OPENRIG_WEBHOOK_POLL_MS', 250, { min: 10 }),
    },
  };
}

/** OPENRIG_GATEWAY_DOMAIN: a DNS name (lower case, no scheme, no port), or empty for none. */
function gatewayDomain(env: Env): string | null {
  const raw = (env.OPENRIG_GATEWAY_DOMAIN ?? '').trim().toLowerCase().replace(/^\*\./, '');
  if (raw === '') return null;
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/.test(raw))
    throw new Error(
      `OPENRIG_GATEWAY_DOMAIN must be a DNS name such as gw.example.com (its wildcard *.gw.example.com points at this server), got ${JSON.stringify(raw)}`,
    );
  return raw;
}

// proxy-addr's names for the private ranges (Fastify passes the list to it).
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * OPENRIG_TRUST_PROXY: empty (trust no proxy), or a comma-separated list of proxy addresses, CIDR
 * ranges and the names loopback, linklocal, uniquelocal. Refused: `true` (believe any
 * X-Forwarded-For: every client could pick the address its anonymous rate limits count against)
 * and a hop count, which cannot tell a proxy from a client that connects directly (Fastify itself
 * trusts no one for a number).
 */
function trustProxy(env: Env): false | string[] {
  const raw = (env.OPENRIG_TRUST_PROXY ?? '').trim();
  if (raw === '') return false;
  const list = raw.split(',').map((e) => e.trim());
  for (const e of list) {
    const [addr, bits, extra] = e.split('/');
    const version = isIP(addr ?? '');
    const bitsOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (version === 6 ? 128 : 32));
    if (!(PROXY_RANGE_NAMES.has(e) || (version !== 0 && bitsOk && extra === undefined))) {
      throw new Error(
        `OPENRIG_TRUST_PROXY must be a comma-separated list of proxy addresses, CIDR ranges, loopback, linklocal, uniquelocal (got ${JSON.stringify(e)})`,
      );
    }
  }
  return list;
}

/** OPENRIG_WEBHOOK_ALLOW_HOSTS: comma-separated IP addresses and CIDR ranges, checked here. */
function webhookAllowHosts(env: Env): string[] {
  const list = str(env, 'OPENRIG_WEBHOOK_ALLOW_HOSTS', '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const e of list) {
    const [addr, bits, extra] = e.split('/');
    const version = isIP(addr ?? '');
    const bitsOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (version === 6 ? 128 : 32));
    if (version === 0 || !bitsOk || extra !== undefined)
      throw new Error(
        `OPENRIG_WEBHOOK_ALLOW_HOSTS must be a comma-separated list of IP addresses and CIDR ranges (got ${JSON.stringify(e)})`,
      );
  }
  return list;
}

/**
 * OPENRIG_PUBLIC_URL: where people reach the console, for the links e-mails carry (a reset link
 * built from a request's Host header would let anyone send a victim a link to their own site).
 * Default: http://PUBLIC_HOST:PORT. An http(s) URL; a trailing slash is dropped.
 */
function publicUrl(env: Env, host: string, port: number): string {
  const raw = str(env, 'OPENRIG_PUBLIC_URL', '');
  if (raw === '') {
    const h = str(env, 'OPENRIG_PUBLIC_HOST', host === '0.0.0.0' ? '127.0.0.1' : host);
    return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
  }
  if (!/^https?:\/\/[^/\s]+(\/\S*)?$/.test(raw))
    throw new Error(`OPENRIG_PUBLIC_URL must be an http:// or https:// URL (got ${JSON.stringify(raw)})`);
  return raw.replace(/\/+$/, '');
}
