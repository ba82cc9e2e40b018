// The twilio provider against a local stand-in of the Verify API: the requests it makes, and
// each error mapping.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TwilioSmsProvider } from './sms.twilio.js';
import { startTwilioStandin, type TwilioStandin } from './sms.twilio-standin.js';
import { AppError } from '../../errors.js';

describe('twilio SMS provider', () => {
  let s: TwilioStandin;
  let p: TwilioSmsProvider;
  beforeAll(async () => {
    s = await startTwilioStandin();
    p = new TwilioSmsProvider({
      accountSid: 'AC123',
      authToken: 'tok456',
      verifyServiceSid: 'VA789',
      apiBase: s.url + '/',
    });
  });
  afterAll(() => s.close());
  beforeEach(() => {
    s.requests.length = 0;
    s.mode.send = 'ok';
    s.mode.check = 'ok';
  });

  const errorOf = async (f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      return { status: (err as AppError).status, code: (err as AppError).code };
    }
    throw new Error('expected an error');
  };

  it('starts a verification: POST /v2/Services/SID/Verifications, Basic auth, form To + Channel=sms', async () => {
    const r = await p.send({ to: '+14155550141', code: null, previousRef: null });
    expect(r.ref).toMatch(/^VE/);
    expect(s.requests).toHaveLength(1);
    const q = s.requests[0]!;
    expect(q.method).toBe('POST');
    expect(q.path).toBe('/v2/Services/VA789/Verifications');
    expect(q.authorization).toBe('Basic ' + Buffer.from('AC123:tok456').toString('base64'));
    expect(q.contentType).toBe('application/x-www-form-urlencoded');
    expect(q.form).toEqual({ To: '+14155550141', Channel: 'sms' });
  });

  it('checks a code: POST VerificationCheck with the verification sid and Code; approved only for the right one', async () => {
    const { ref } = await p.send({ to: '+14155550142', code: null, previousRef: null });
    const code = s.codes.get('+14155550142')!;
    expect(await p.check({ to: '+14155550142', code: code === '111111' ? '222222' : '111111', ref })).toBe(
      false,
    );
    expect(await p.check({ to: '+14155550142', code, ref })).toBe(true);
    const checks = s.requests.filter((q) => q.path === '/v2/Services/VA789/VerificationCheck');
    expect(checks[1]!.form).toEqual({ VerificationSid: ref, Code: code });
    // Used: the provider forgets it (404), which is "not approved".
    expect(await p.check({ to: '+14155550142', code, ref })).toBe(false);
  });

  it('a resend cancels the previous verification first, so the old code stops working', async () => {
    const first = await p.send({ to: '+14155550143', code: null, previousRef: null });
    const old = s.codes.get('+14155550143')!;
    const second = await p.send({ to: '+14155550143', code: null, previousRef: first.ref });
    expect(s.requests[1]!.path).toBe(`/v2/Services/VA789/Verifications/${first.ref}`);
    expect(s.requests[1]!.form).toEqual({ Status: 'canceled' });
    expect(await p.check({ to: '+14155550143', code: old, ref: first.ref })).toBe(false);
    expect(await p.check({ to: '+14155550143', code: s.codes.get('+14155550143')!, ref: second.ref })).toBe(
      true,
    );
  });

  it('maps a failed send to twilio_error (400) and the provider 429 to twilio_rate_limited', async () => {
    s.mode.send = 'fail';
    expect(await errorOf(() => p.send({ to: '+14155550144', code: null, previousRef: null }))).toEqual({
      status: 400,
      code: 'twilio_error',
    });
    s.mode.send = 'down';
    expect(await errorOf(() => p.send({ to: '+14155550144', code: null, previousRef: null }))).toEqual({
      status: 400,
      code: 'twilio_error',
    });
    s.mode.send = 'rate_limited';
    expect(await errorOf(() => p.send({ to: '+14155550144', code: null, previousRef: null }))).toEqual({
      status: 429,
      code: 'twilio_rate_limited',
    });
  });

  it('maps an unreachable provider during a check (a gate) to service_unavailable 503, its 429 to twilio_rate_limited', async () => {
    s.mode.check = 'down';
    expect(await errorOf(() => p.check({ to: '+14155550145', code: '123456', ref: 'VEx' }))).toEqual({
      status: 503,
      code: 'service_unavailable',
    });
    s.mode.check = 'rate_limited';
    expect(await errorOf(() => p.check({ to: '+14155550145', code: '123456', ref: 'VEx' }))).toEqual({
      status: 429,
      code: 'twilio_rate_limited',
    });
    const nowhere = new TwilioSmsProvider({
      accountSid: 'a',
      authToken: 'b',
      verifyServiceSid: 'c',
      apiBase: 'http://127.0.0.1:1',
    });
    expect(await errorOf(() => nowhere.check({ to: '+14155550145', code: '123456', ref: null }))).toEqual({
      status: 503,
      code: 'service_unavailable',
    });
    expect(await errorOf(() => nowhere.send({ to: '+14155550145', code: null, previousRef: null }))).toEqual({
      status: 400,
      code: 'twilio_error',
    });
  });
});
