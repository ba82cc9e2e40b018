// The checks of an account update body: what is taken, how, and the 400 of everything else.
import { describe, expect, it } from 'vitest';
import { AppError } from '../../errors.js';
import { MAX_MSG } from '../../http/error-handler.js';
import { parseAccountUpdate, REFUSED_FIELDS, TEXT_LIMITS } from './accounts.settings.js';

function refusal(body: unknown): { msg: string; fields?: unknown } {
  try {
    parseAccountUpdate(body);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect([e.status, e.code]).toEqual([400, 'bad_request']);
    return { msg: e.message, fields: e.extra.fields };
  }
  throw new Error('accepted');
}

describe('parseAccountUpdate', () => {
  it('takes the name, the billing address and the threshold settings, trimmed, as given', () => {
    expect(
      parseAccountUpdate({
        fullname: '  Ada Lovelace ',
        billaddress_line1: '12 St James Sq',
        billaddress_line2: '',
        billaddress_city: 'London',
        billaddress_zip: 'SW1Y 4JH',
        billaddress_country: 'GB',
        billaddress_taxinfo: null,
        balance_threshold_enabled: true,
        balance_threshold: 12.5,
      }),
    ).toEqual({
      fullname: 'Ada Lovelace',
      billing: {
        billaddress_line1: '12 St James Sq',
        billaddress_line2: null,
        billaddress_city: 'London',
        billaddress_zip: 'SW1Y 4JH',
        billaddress_country: 'GB',
        billaddress_taxinfo: null,
      },
      thresholdEnabled: true,
      thresholdMicros: 12_500_000,
      fields: [
        'fullname',
        'billaddress_line1',
        'billaddress_line2',
        'billaddress_city',
        'billaddress_zip',
        'billaddress_country',
        'billaddress_taxinfo',
        'balance_threshold_enabled',
        'balance_threshold',
      ],
    });
  });

  it('leaves out what is not given; full_name is fullname; the strings the CLI help suggests are taken', () => {
    expect(parseAccountUpdate({ full_name: 'Ada' })).toEqual({
      fullname: 'Ada',
      billing: {},
      fields: ['fullname'],
    });
    expect(parseAccountUpdate({ fullname: null }).fullname).toBe('');
    expect(
      parseAccountUpdate({ balance_threshold_enabled: 'FALSE', balance_threshold: '7.25' }),
    ).toMatchObject({
      thresholdEnabled: false,
      thresholdMicros: 7_250_000,
    });
    expect(parseAccountUpdate({ balance_threshold: null }).thresholdMicros).toBeNull();
    expect(parseAccountUpdate({ balance_threshold: 0 }).thresholdMicros).toBe(0);
  });

  it('refuses the fields that protect the account, naming each and how it is changed', () => {
    const r = refusal({ fullname: 'x', email: 'new@example.com', phone_number: '+14155550123' });
    expect(r.fields).toEqual(['email', 'phone_number']);
    expect(r.msg).toMatch(
      /^These fields cannot be changed here: email \(the sign-in address; the operator of this server changes it\); /,
    );
    expect(r.msg).toContain(
      'phone_number (an SMS second factor: tfa send-sms then tfa activate adds one, tfa delete removes one)',
    );
    for (const f of [
      'password',
      'new_password',
      'normalized_email',
      'username',
      'ssh_key',
      'autobill_threshold',
    ]) {
      const one = refusal({ [f]: 'x' });
      expect(one.msg).toBe(`This field cannot be changed here: ${f} (${REFUSED_FIELDS[f]})`);
    }
    // The error handler cuts a msg at MAX_MSG characters: the usual combination fits whole.
    const three = refusal({ email: 'a@b.c', phone_number: '+1', password: 'p' });
    expect(three.msg.length).toBeLessThanOrEqual(MAX_MSG);
    expect(three.msg).toMatch(/; password \(set by the operator of this server\)$/);
  });

  it('refuses read-only fields of the user object and unknown fields, naming them', () => {
    expect(refusal({ balance: 1e6, is_admin: true })).toEqual({
      msg: 'Read-only fields of the user object: balance, is_admin',
      fields: ['balance', 'is_admin'],
    });
    const u = refusal({ fullname: 'x', nickname: 'a', 'bill-city': 'b' });
    expect(u.fields).toEqual(['nickname', 'bill-city']);
    expect(u.msg).toMatch(
      /^Unknown fields: "nickname", "bill-city"; an account update takes fullname, billaddress_line1, /,
    );
  });

  it('refuses wrong types, over-long and multi-line text, bad thresholds, and nothing at all', () => {
    const cases: [unknown, string][] = [
      [null, 'The body must be a JSON object of account fields: fullname, '],
      [['fullname'], 'The body must be a JSON object'],
      ['{}', 'The body must be a JSON object'],
      [{}, 'Nothing to change: give one or more of fullname, '],
      [{ fullname: 7 }, 'fullname must be a string or null, not 7'],
      [{ billaddress_zip: ['1'] }, 'billaddress_zip must be a string or null, not ["1"]'],
      [{ billaddress_zip: 'x'.repeat(33) }, 'billaddress_zip must be at most 32 characters (it has 33)'],
      [
        { fullname: 'é'.repeat(TEXT_LIMITS.fullname + 1) },
        'fullname must be at most 200 characters (it has 201)',
      ],
      [{ billaddress_line1: 'a\nb' }, 'billaddress_line1 must not contain control characters'],
      [{ balance_threshold_enabled: 1 }, 'balance_threshold_enabled must be true or false, not 1'],
      [{ balance_threshold_enabled: 'yes' }, 'balance_threshold_enabled must be true or false, not "yes"'],
      [
        { balance_threshold: -1 },
        'balance_threshold must be a number of dollars from 0 to 1000000000, or null, not -1',
      ],
      [{ balance_threshold: 'ten' }, 'balance_threshold must be a number of dollars'],
      [{ balance_threshold: '' }, 'balance_threshold must be a number of dollars'],
      [{ balance_threshold: 1e10 }, 'balance_threshold must be a number of dollars'],
      [{ full_name: 'a', fullname: 'b' }, 'fullname and full_name name the same field: give one of them'],
    ];
    for (const [body, msg] of cases) expect(refusal(body).msg, JSON.stringify(body)).toContain(msg);
  });

  it('a fullname at the limit in characters (not bytes) is taken', () => {
    expect(parseAccountUpdate({ fullname: '字'.repeat(200) }).fullname).toHaveLength(200);
  });
});
