// Configuration from the environment: a value out of its range stops start-up with a message
// naming the variable and the range, before anything listens or is written.
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

const base = { OPENRIG_SECRET_KEY: 'ab'.repeat(32), OPENRIG_DATA: '/nonexistent/openrig-config-test' };

describe('loadConfig', () => {
  it('takes OPENRIG_PORT and OPENRIG_LOG_FLUSH_MS within their ranges', () => {
    const c = loadConfig({ ...base, OPENRIG_PORT: '9000', OPENRIG_LOG_FLUSH_MS: '0' });
    expect(c.port).toBe(9000);
    expect(c.logFlushMs).toBe(0);
    expect(loadConfig(base).logFlushMs).toBe(20);
  });

  it('refuses values out of range, naming the variable and the range', () => {
    expect(() => loadConfig({ ...base, OPENRIG_PORT: '70000' })).toThrow(
      'OPENRIG_PORT must be a number >= 0 and <= 65535 (got "70000")',
    );
    expect(() => loadConfig({ ...base, OPENRIG_METRICS_PORT: '-1' })).toThrow(/OPENRIG_METRICS_PORT must be/);
    expect(() => loadConfig({ ...base, OPENRIG_LOG_FLUSH_MS: '-5' })).toThrow(
      'OPENRIG_LOG_FLUSH_MS must be a number >= 0 and <= 60000 (got "-5")',
    );
    expect(() => loadConfig({ ...base, OPENRIG_LOG_FLUSH_MS: 'soon' })).toThrow(/OPENRIG_LOG_FLUSH_MS/);
    expect(() => loadConfig({ ...base, OPENRIG_MAIL_MAX_ATTEMPTS: '0' })).toThrow(
      'OPENRIG_MAIL_MAX_ATTEMPTS must be a number >= 1 (got "0")',
    );
  });

  it("takes pino's log levels and refuses any other, naming OPENRIG_LOG_LEVEL", () => {
    expect(loadConfig(base).logLevel).toBe('info');
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      expect(loadConfig({ ...base, OPENRIG_LOG_LEVEL: level }).logLevel).toBe(level);
    expect(() => loadConfig({ ...base, OPENRIG_LOG_LEVEL: 'loud' })).toThrow(
      'OPENRIG_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    );
    expect(() => loadConfig({ ...base, OPENRIG_LOG_LEVEL: 'INFO' })).toThrow(/OPENRIG_LOG_LEVEL/);
  });

  it('takes SMTP_URL as smtp:// or smtps:// with a host, and refuses anything else without quoting it', () => {
    expect(loadConfig(base).mail).toMatchObject({
      smtpUrl: null,
      outboxFile: expect.stringMatching(/mail-outbox\.jsonl$/),
    });
    expect(loadConfig({ ...base, SMTP_URL: '' }).mail.smtpUrl).toBeNull();
    for (const url of [
      'smtp://127.0.0.1:2525',
      'smtp://relay:s3cret@mail.example.com:587',
      'smtps://relay:s3cret@mail.example.com',
      'smtp://mail.example.com?pool=false&secure=true',
    ]) {
      const c = loadConfig({ ...base, SMTP_URL: url });
      expect(c.mail.smtpUrl).toBe(url);
      expect(c.mail.outboxFile).toBeNull();
    }
    // SMTP and the outbox file together.
    expect(
      loadConfig({ ...base, SMTP_URL: 'smtp://h', OPENRIG_MAIL_OUTBOX: '/tmp/o.jsonl' }).mail.outboxFile,
    ).toBe('/tmp/o.jsonl');
    for (const bad of [
      'mail.example.com',
      'http://relay:hunter2@mail.example.com',
      'smtp:',
      'smtp://',
      'file:///tmp/x',
    ]) {
      let message = '';
      try {
        loadConfig({ ...base, SMTP_URL: bad });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, bad).toMatch(/^SMTP_URL must be smtp:\/\//);
      expect(message).not.toContain('hunter2');
    }
  });

  it('needs the TWILIO_* variables with OPENRIG_SMS_PROVIDER=twilio, naming those missing', () => {
    const twilio = {
      ...base,
      OPENRIG_SMS_PROVIDER: 'twilio',
      TWILIO_ACCOUNT_SID: 'AC1',
      TWILIO_AUTH_TOKEN: 'tok',
      TWILIO_VERIFY_SERVICE_SID: 'VA1',
    };
    expect(loadConfig(twilio).sms).toMatchObject({
      provider: 'twilio',
      twilio: {
        accountSid: 'AC1',
        authToken: 'tok',
        verifyServiceSid: 'VA1',
        apiBase: 'https://verify.twilio.com',
      },
    });
    expect(loadConfig({ ...twilio, TWILIO_API_BASE: 'http://127.0.0.1:9999' }).sms.twilio.apiBase).toBe(
      'http://127.0.0.1:9999',
    );
    expect(() => loadConfig({ ...twilio, TWILIO_AUTH_TOKEN: '' })).toThrow(
      'OPENRIG_SMS_PROVIDER=twilio needs TWILIO_AUTH_TOKEN (not set)',
    );
    expect(() => loadConfig({ ...base, OPENRIG_SMS_PROVIDER: 'twilio' })).toThrow(
      'OPENRIG_SMS_PROVIDER=twilio needs TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_VERIFY_SERVICE_SID (not set)',
    );
    expect(() => loadConfig({ ...twilio, TWILIO_API_BASE: 'verify.twilio.com' })).toThrow(
      /TWILIO_API_BASE must be/,
    );
    expect(() => loadConfig({ ...base, OPENRIG_SMS_PROVIDER: 'sns' })).toThrow(
      'OPENRIG_SMS_PROVIDER must be outbox or twilio (got "sns")',
    );
    // The outbox provider needs none of them.
    expect(loadConfig(base).sms.provider).toBe('outbox');
  });

  it('reads every boolean variable alike: 1/true/on, 0/false/off in any case, else refused by name', () => {
    const flags = [
      ['OPENRIG_WEBHOOK_ALLOW_HTTP', (c: ReturnType<typeof loadConfig>) => c.webhooks.allowHttp, false],
      ['OPENRIG_AUTO_VERIFY', (c: ReturnType<typeof loadConfig>) => c.agent.autoVerify, false],
      ['OPENRIG_RATE_LIMITS', (c: ReturnType<typeof loadConfig>) => c.rateLimits.enabled, true],
    ] as const;
    for (const [name, read, def] of flags) {
      expect(read(loadConfig(base)), name).toBe(def);
      expect(read(loadConfig({ ...base, [name]: '' })), name).toBe(def);
      for (const on of ['1', 'true', 'on', 'ON', 'True', ' on '])
        expect(read(loadConfig({ ...base, [name]: on })), `${name}=${on}`).toBe(true);
      for (const off of ['0', 'false', 'off', 'OFF', 'False'])
        expect(read(loadConfig({ ...base, [name]: off })), `${name}=${off}`).toBe(false);
      for (const bad of ['yes', 'no', 'enabled', '2'])
        expect(() => loadConfig({ ...base, [name]: bad }), `${name}=${bad}`).toThrow(
          `${name} must be one of 1, true, on, 0, false, off (got ${JSON.stringify(bad)})`,
        );
    }
  });
});
