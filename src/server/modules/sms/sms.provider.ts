// The SMS seam, so tests control what is sent: one interface, two providers, chosen by OPENRIG_SMS_PROVIDER
// (docs/two-factor.md). Tests may put their own provider in `deps.seams.sms`.
// - `outbox` (default, development): we generate the code; the SMS body goes to a JSONL file.
// - `twilio`: the provider's Verify REST API generates, sends and checks the code.
import type { Deps } from '../../deps.js';
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

export function smsProvider(deps: Pick<Deps, 'config' | 'clock' | 'seams'>): SmsProvider {
  const injected = deps.seams.sms as SmsProvider | undefined;
  if (injected) return injected;
  const cfg = deps.config.sms;
  switch (cfg.provider) {
    case 'outbox':
      return new OutboxSmsProvider(cfg.outboxFile, deps.clock, deps.config.tfa.challengeTtlS);
    case 'twilio':
      return new TwilioSmsProvider(cfg.twilio);
    default: {
      const never: never = cfg.provider;
      throw new Error(`unknown SMS provider ${String(never)}`);
    }
  }
}
