import { describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { AppError } from '../../errors.js';
import {
  ONSTART_MAX_CHARS,
  ONSTART_MAX_DECODED,
  decodeOnstart,
  parseCreateBody,
} from './instance-config.parse.js';

function refused(fn: () => unknown, text: string): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(400);
    expect((err as AppError).message).toContain(text);
    return;
  }
  throw new Error('expected a 400');
}

const b64gz = (s: string) => gzipSync(Buffer.from(s)).toString('base64');

describe('create-instance body', () => {
  it('keeps onstart up to 4048 characters as it is', () => {
    const s = 'a'.repeat(ONSTART_MAX_CHARS);
    expect(decodeOnstart(s)).toBe(s);
    refused(() => decodeOnstart('a'.repeat(ONSTART_MAX_CHARS + 1)), '4048');
    const emoji = '🚀'.repeat(ONSTART_MAX_CHARS); // 4048 characters, 8096 UTF-16 units
    expect(decodeOnstart(emoji)).toBe(emoji);
  });

  it('decodes gzip+base64 (short or long, with line breaks) and checks the result', () => {
    expect(decodeOnstart(b64gz('echo hi\n'))).toBe('echo hi\n');
    const long = 'echo 0123456789abcdef\n'.repeat(20000).slice(0, ONSTART_MAX_DECODED);
    const wrapped = b64gz(long).replace(/(.{76})/g, '$1\n');
    expect(
      decodeOnstart(wrapped.length > ONSTART_MAX_CHARS ? wrapped : wrapped + '\n'.repeat(ONSTART_MAX_CHARS)),
    ).toBe(long);
    refused(
      () => decodeOnstart(b64gz('x'.repeat(ONSTART_MAX_DECODED + 1)) + '\n'.repeat(ONSTART_MAX_CHARS)),
      String(ONSTART_MAX_DECODED),
    );
    refused(
      () =>
        decodeOnstart(
          gzipSync(Buffer.from([0x00, 0xff, 0xfe])).toString('base64') + '\n'.repeat(ONSTART_MAX_CHARS),
        ),
      'UTF-8',
    );
    refused(() => decodeOnstart('H4sI' + '!'.repeat(ONSTART_MAX_CHARS)), '4048');
  });

  it('reads port requests from env and keeps the rest as variables', () => {
    const r = parseCreateBody({
      image: 'img',
      env: { '-p 8080:8080': '1', '-p 9000/udp': '1', A: 'b', N: 3 },
    });
    expect(r.ports).toEqual([
      { container: 8080, host: 8080, proto: 'tcp' },
      { container: 9000, host: null, proto: 'udp' },
    ]);
    expect(r.env).toEqual({ A: 'b', N: '3' });
    expect(r.rawEnv).toHaveProperty(['-p 8080:8080']);
    refused(() => parseCreateBody({ image: 'img', env: { '-p 0': '1' } }), 'port');
    refused(() => parseCreateBody({ image: 'img', env: { '-p abc': '1' } }), 'port');
    refused(() => parseCreateBody({ image: 'img', env: { 'BAD NAME': '1' } }), 'BAD NAME');
    refused(() => parseCreateBody({ image: 'img', env: ['A=1'] }), 'env');
    refused(() => parseCreateBody({ image: 'img', env: { A: { x: 1 } } }), 'env.A');
  });

  it('validates image, disk, price, runtype, args and defaults what is missing', () => {
    expect(parseCreateBody({ image: ' img:1 ' })).toMatchObject({
      image: 'img:1',
      disk: 10,
      runtype: 'ssh',
      price: null,
      label: '',
      onstart: '',
      args: null,
    });
    expect(
      parseCreateBody({ image: 'i', runtype: 'jupyter_proxy  ssh_proxy', price: 0.3, args: ['a'] }),
    ).toMatchObject({ runtype: 'jupyter_proxy ssh_proxy', price: 0.3, args: ['a'] });
    refused(() => parseCreateBody({ image: 'two words' }), 'image');
    refused(() => parseCreateBody({ image: 'i', disk: '10' }), 'disk');
    refused(() => parseCreateBody({ image: 'i', price: -1 }), 'price');
    refused(() => parseCreateBody({ image: 'i', runtype: 'ssh rdp' }), 'rdp');
    refused(() => parseCreateBody({ image: 'i', args: 'x' }), 'args');
    refused(() => parseCreateBody({ image: 'i', label: 5 }), 'label');
    refused(() => parseCreateBody(null), 'image');
  });
});
