// SMS codes through the provider's Verify REST API (v2), one `fetch` per request
// rather than the provider's SDK, which weighs 29 MB. TWILIO_API_BASE points tests at a stand-in.
// Error mapping (the 2FA codes of docs/two-factor.md):
// - send: the provider's 429 → twilio_rate_limited; any other failure (4xx, 5xx, unreachable)
//   → twilio_error (the SMS could not be sent).
// - check (an authorization gate): unreachable or 5xx → service_unavailable (503); 429 →
//   twilio_rate_limited; 404 (verification gone: expired, used, cancelled) → not approved.
import { SmsErrors } from './sms.errors.js';
import type { SmsProvider } from './sms.provider.js';

export interface TwilioConfig {
  accountSid: string;
  authToken: string;
  verifyServiceSid: string;
  apiBase: string;
}

const TIMEOUT_MS = 10_000;

export class TwilioSmsProvider implements SmsProvider {
  readonly name = 'twilio';
  readonly codes = 'remote' as const;
  constructor(private readonly cfg: TwilioConfig) {}

  private url(p: string): string {
    return `${this.cfg.apiBase.replace(/\/+$/, '')}/v2/Services/${encodeURIComponent(this.cfg.verifyServiceSid)}${p}`;
  }

  private post(p: string, form: Record<string, string>): Promise<Response> {
    return fetch(this.url(p), {
      method: 'POST',
      headers: {
        authorization:
          'Basic ' + Buffer.from(`${this.cfg.accountSid}:${this.cfg.authToken}`).toString('base64'),
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: new URLSearchParams(form).toString(),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  }

  async send(p: {
    to: string;
    code: string | null;
    previousRef: string | null;
  }): Promise<{ ref: string | null }> {
    if (p.previousRef) {
      // A resend invalidates the previous code: cancel that verification first. Best effort: one
      // that already expired answers 404, which is what we want anyway.
      await this.post(`/Verifications/${encodeURIComponent(p.previousRef)}`, { Status: 'canceled' })
        .then((r) => r.body?.cancel())
        .catch(() => {});
    }
    let res: Response;
    try {
      res = await this.post('/Verifications', { To: p.to, Channel: 'sms' });
    } catch {
      throw SmsErrors.twilioError();
    }
    if (res.status === 429) throw SmsErrors.twilioRateLimited();
    if (!res.ok) throw SmsErrors.twilioError();
    const body = (await res.json().catch(() => null)) as { sid?: unknown } | null;
    return { ref: typeof body?.sid === 'string' ? body.sid : null };
  }

  async check(p: { to: string; code: string; ref: string | null }): Promise<boolean> {
    let res: Response;
    try {
      const form: Record<string, string> = { Code: p.code };
      if (p.ref) form.VerificationSid = p.ref;
      else form.To = p.to;
      res = await this.post('/VerificationCheck', form);
    } catch {
      throw SmsErrors.unavailable();
    }
    if (res.status === 429) throw SmsErrors.twilioRateLimited();
    if (res.status === 404) return false;
    if (res.status >= 500) throw SmsErrors.unavailable();
    if (!res.ok) return false;
    const body = (await res.json().catch(() => null)) as { status?: unknown } | null;
    return body?.status === 'approved';
  }
}
