// The SMS seam: one interface, two providers, chosen by OPENRIG_SMS_PROVIDER (docs/two-factor.md).
// Made once per process (deps.ts `sms`); tests may pass their own provider there.
// - `outbox` (default, development): we generate the code; the SMS body goes to a JSONL file.
// - `twilio`: the provider's Verify REST API generates, sends and checks the code.
import type { Config } from '../../config.js';
import type { Clock } from '../../clock.js';
import { OutboxSmsProvider } from './sms.outbox.js';
import { TwilioSmsProvider } from './sms.twilio.js';

export interface SmsProvider {
  readonly name: string;
  /** 'local': openrig makes the code and checks its HMAC; 'remote': the provider does both. */
  readonly codes: 'local' | 'remote';
  /**
   * Sends a code to `to` (E.164). `code` is set for local providers. `previousRef` is the
   * provider's id of an earlier verification to the same challenge: a resend cancels it, so the
   * old code stops working. Throws AppError twilio_error / twilio_rate_limited.
   */
  send(p: { to: string; code: string | null; previousRef: string | null }): Promise<{ ref: string | null }>;
  /** Remote providers: whether `code` is right. Throws service_unavailable when unreachable. */
  check(p: { to: string; code: string; ref: string | null }): Promise<boolean>;
}

export function smsProvider(config: Config, clock: Clock): SmsProvider {
  const cfg = config.sms;
  switch (cfg.provider) {
    case 'outbox':
      return new OutboxSmsProvider(cfg.outboxFile, clock, config.tfa.challengeTtlS);
    case 'twilio':
      return new TwilioSmsProvider(cfg.twilio);
    default: {
      const never: never = cfg.provider;
      throw new Error(`unknown SMS provider ${String(never)}`);
    }
  }
}
