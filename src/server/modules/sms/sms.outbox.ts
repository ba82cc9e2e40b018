// The development SMS provider: each message is appended to a JSONL file as
// `{"at", "to", "body"}` (a format scripts rely on; docs/two-factor.md); the code is six digits in `body`.
import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../../clock.js';
import type { SmsProvider } from './sms.provider.js';

export function smsBody(code: string, ttlS: number): string {
  return `Your openrig verification code is ${code}. It expires in ${Math.round(ttlS / 60)} minutes. Never share it.`;
}

export class OutboxSmsProvider implements SmsProvider {
  readonly name = 'outbox';
  readonly codes = 'local' as const;
  constructor(
    private readonly file: string,
    private readonly clock: Clock,
    private readonly ttlS: number,
  ) {}

  async send(p: {
    to: string;
    code: string | null;
    previousRef: string | null;
  }): Promise<{ ref: string | null }> {
    if (!p.code) throw new Error('the outbox provider needs the code');
    await mkdir(path.dirname(this.file), { recursive: true });
    const line = JSON.stringify({
      at: new Date(this.clock.now()).toISOString(),
      to: p.to,
      body: smsBody(p.code, this.ttlS),
    });
    await appendFile(this.file, line + '\n', { mode: 0o600 });
    return { ref: null };
  }

  async check(): Promise<boolean> {
    throw new Error('the outbox provider does not check codes: openrig checks them itself');
  }
}
