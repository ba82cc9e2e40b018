// Which addresses deliveries may reach, and which URLs are accepted.
import { describe, expect, it } from 'vitest';
import {
  addressAllowed,
  allowList,
  embeddedV4,
  hostProblem,
  resolveAllowed,
  urlProblem,
} from './webhooks.address.js';
import { filterMatches } from './webhooks.events.js';
import { sign } from './webhooks.signing.js';

const none = allowList([]);

describe('webhook address policy', () => {
  it('refuses loopback, private, shared, link-local, metadata, unspecified, multicast and reserved addresses', () => {
    for (const a of [
      '127.0.0.1',
      '127.8.9.10',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:169.254.169.254',
      '64:ff9b::10.0.0.1',
    ])
      expect(addressAllowed(a, none), a).toBe(false);
  });

  it('allows public addresses, and private ones only inside OPENRIG_WEBHOOK_ALLOW_HOSTS', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(addressAllowed(a, none), a).toBe(true);
    const allow = allowList(['127.0.0.1/32', '10.0.0.0/8']);
    expect(addressAllowed('127.0.0.1', allow)).toBe(true);
    expect(addressAllowed('::ffff:127.0.0.1', allow)).toBe(true);
    expect(addressAllowed('10.200.0.1', allow)).toBe(true);
    expect(addressAllowed('127.0.0.2', allow)).toBe(false);
    expect(addressAllowed('169.254.169.254', allow)).toBe(false);
    expect(embeddedV4('::ffff:a9fe:a9fe')).toBe('169.254.169.254');
  });

  it('judges IPv6 forms that carry an IPv4 address by it, and refuses tunnels it cannot read', async () => {
    const inside = [
      '::ffff:10.0.0.1', // IPv4-mapped
      '0:0:0:0:0:ffff:7f00:1',
      '::ffff:0:127.0.0.1', // IPv4-translated
      '::127.0.0.1', // IPv4-compatible
      '::a9fe:a9fe',
      '::c0a8:101',
      '64:ff9b::7f00:1', // NAT64, well-known prefix
      '64:ff9b::169.254.169.254',
      '2002:7f00:1::1', // 6to4
      '2002:a9fe:a9fe::',
      '2002:c0a8:0101:5::7',
      '64:ff9b:1::8.8.8.8', // NAT64, local-use prefix: refused whole
      '64:ff9b:1:ffff::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo: refused whole
      '2001::1',
      'fe80::1%eth0',
    ];
    for (const a of inside) expect(addressAllowed(a, none), a).toBe(false);
    for (const a of ['::ffff:0:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1', '2001:4860:4860::8888'])
      expect(addressAllowed(a, none), a).toBe(true);
    expect(embeddedV4('2002:c0a8:0101:5::7')).toBe('192.168.1.1');
    expect(embeddedV4('::127.0.0.1')).toBe('127.0.0.1');
    expect(embeddedV4('2606:4700:4700::1111')).toBeNull();

    // When the URL is set (hosts as the URL parser writes them) and when a delivery is sent.
    for (const a of inside.filter((x) => !x.includes('%'))) {
      const host = new URL(`https://[${a}]/hook`).hostname;
      expect(await hostProblem(host, none), host).toMatch(/must not point at/);
      await expect(resolveAllowed(host, none), host).rejects.toThrow(/may not reach/);
      const named = async () => [{ address: a, family: 6 as const }];
      expect(await hostProblem('aaaa.example.com', none, named), a).toMatch(/resolves to/);
      await expect(resolveAllowed('aaaa.example.com', none, named), a).rejects.toThrow(/may not reach/);
    }
  });

  it('checks the address the name resolves to, so a name pointing inside is refused', async () => {
    const rebinding = async () => [{ address: '169.254.169.254', family: 4 as const }];
    await expect(resolveAllowed('metadata.example.com', none, rebinding)).rejects.toThrow(/may not reach/);
    const publicAnswer = async () => [{ address: '93.184.215.14', family: 4 as const }];
    await expect(resolveAllowed('example.com', none, publicAnswer)).resolves.toEqual({
      address: '93.184.215.14',
      family: 4,
    });
    await expect(resolveAllowed('[::1]', none)).rejects.toThrow(/may not reach/);
  });

  it('refuses at creation a host that is, or resolves to, an address deliveries may not reach', async () => {
    for (const h of ['127.0.0.1', '[::1]', '[::ffff:7f00:1]', '169.254.169.254', '10.1.2.3'])
      expect(await hostProblem(h, none), h).toMatch(/must not point at/);
    expect(await hostProblem('127.0.0.1', allowList(['127.0.0.1/32']))).toBeNull();
    expect(await hostProblem('8.8.8.8', none)).toBeNull();
    // Every address the name has now is judged, not only the first.
    const mixed = async () => [
      { address: '93.184.215.14', family: 4 as const },
      { address: '10.0.0.7', family: 4 as const },
    ];
    expect(await hostProblem('mixed.example.com', none, mixed)).toMatch(/resolves to 10\.0\.0\.7/);
    const publicOnly = async () => [{ address: '93.184.215.14', family: 4 as const }];
    expect(await hostProblem('example.com', none, publicOnly)).toBeNull();
    // A name that does not resolve, or not in time, is left to the check at send time.
    const nxdomain = async () => Promise.reject(new Error('ENOTFOUND'));
    expect(await hostProblem('not-yet.example.com', none, nxdomain)).toBeNull();
    const never = () => new Promise<never>(() => undefined);
    expect(await hostProblem('slow.example.com', none, never, 20)).toBeNull();
  });

  it('accepts https URLs only, http only when allowed, never credentials in the URL', () => {
    expect(urlProblem('https://example.com/hook', { allowHttp: false })).toBeNull();
    expect(urlProblem('http://example.com/hook', { allowHttp: false })).toMatch(/https/);
    expect(urlProblem('http://example.com/hook', { allowHttp: true })).toBeNull();
    expect(urlProblem('ftp://example.com/', { allowHttp: true })).not.toBeNull();
    expect(urlProblem('https://u:p@example.com/', { allowHttp: false })).toMatch(/password/);
    expect(urlProblem('not a url', { allowHttp: false })).not.toBeNull();
  });
});

describe('webhook filters and signatures', () => {
  it('matches exact types, family prefixes and *', () => {
    expect(filterMatches(['instance.*'], 'instance.running')).toBe(true);
    expect(filterMatches(['instance.*'], 'machine.online')).toBe(false);
    expect(filterMatches(['tfa.locked'], 'tfa.locked')).toBe(true);
    expect(filterMatches(['tfa.locked'], 'tfa.enabled')).toBe(false);
    expect(filterMatches(['*'], 'balance.low')).toBe(true);
  });

  it('signs id.timestamp.body with the secret bytes (a known vector)', () => {
    // The example of the Standard Webhooks specification.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"test": 2432232314}';
    expect(sign(secret, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, body)).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });
});
