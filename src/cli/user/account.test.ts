// `set account`: the body it sends from its flags, and how `show user` prints the settings.
import { describe, expect, it } from 'vitest';
import { accountSettingsBody, billingAddress, userDetail } from './account.js';

describe('set account body', () => {
  it('sends only what is given; "" clears a billing field', () => {
    expect(accountSettingsBody({ fullname: 'Ada Lovelace', billingCity: 'London', billingZip: '' })).toEqual({
      fullname: 'Ada Lovelace',
      billaddress_city: 'London',
      billaddress_zip: null,
    });
    expect(
      accountSettingsBody({
        billingLine1: '12 St James Sq',
        billingLine2: 'Flat 2',
        billingCountry: 'GB',
        billingTaxinfo: 'GB123',
      }),
    ).toEqual({
      billaddress_line1: '12 St James Sq',
      billaddress_line2: 'Flat 2',
      billaddress_country: 'GB',
      billaddress_taxinfo: 'GB123',
    });
  });

  it('--balance-threshold: dollars turn the alert on at them, off turns it off', () => {
    expect(accountSettingsBody({ balanceThreshold: '10' })).toEqual({
      balance_threshold_enabled: true,
      balance_threshold: 10,
    });
    expect(accountSettingsBody({ balanceThreshold: '$2.5' }).balance_threshold).toBe(2.5);
    expect(accountSettingsBody({ balanceThreshold: 'off' })).toEqual({ balance_threshold_enabled: false });
    expect(accountSettingsBody({ balanceThreshold: 'OFF' })).toEqual({ balance_threshold_enabled: false });
  });

  it('nothing given, or a threshold that is not dollars, is a usage error', () => {
    expect(() => accountSettingsBody({})).toThrow(
      /^nothing to change: give --fullname, --balance-threshold or --billing-line1/,
    );
    for (const v of ['ten', '-1', ''])
      expect(() => accountSettingsBody({ balanceThreshold: v })).toThrow(
        '--balance-threshold must be a number',
      );
  });
});

describe('show user', () => {
  const base = {
    id: 7,
    email: 'ada@example.com',
    full_name: 'Ada',
    balance: 12.5,
    tfa_status: 'disabled' as const,
  };

  it('prints the billing address on one line and the balance alert', () => {
    const out = userDetail(
      {
        ...base,
        billaddress_line1: '12 St James Sq',
        billaddress_line2: null,
        billaddress_city: 'London',
        billaddress_zip: 'SW1Y 4JH',
        billaddress_country: 'GB',
        billaddress_taxinfo: 'GB123',
        balance_threshold_enabled: true,
        balance_threshold: 10,
      },
      Date.now(),
    );
    expect(out).toMatch(/^Billing address:\s+12 St James Sq, London SW1Y 4JH, GB; tax GB123$/m);
    expect(out).toMatch(/^Balance alert:\s+at or below \$10\.00$/m);
  });

  it('leaves the address out when there is none; an alert that is off says so', () => {
    const out = userDetail({ ...base, balance_threshold_enabled: false, balance_threshold: 10 }, Date.now());
    expect(out).not.toContain('Billing address');
    expect(out).toMatch(/^Balance alert:\s+off$/m);
    expect(billingAddress({ ...base, billaddress_taxinfo: 'X' })).toBe('tax X');
  });
});
