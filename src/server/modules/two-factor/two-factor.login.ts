// The 2FA branch of `POST /api/v0/users/login/` (operator-contract "Endpoints the spec implies").
// Owned by the two-factor module: it creates the login challenge whose `tfa_secret` then
// authenticates the logged-out 2FA calls.
import type { Deps } from '../../deps.js';
import type { User } from '../../http/auth.js';
import { AppError } from '../../errors.js';

export interface TfaLoginStart {
  tfa_secret: string;
  methods: { id: number; method: string; label: string; is_primary: boolean }[];
}

export async function beginTfaLogin(_deps: Deps, _user: User): Promise<TfaLoginStart> {
  throw new AppError(503, 'service_unavailable', '2FA login is not available yet');
}
