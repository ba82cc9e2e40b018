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
});
