import { defineErrors } from '../../errors.js';

/**
 * Refusals of a single sign-on. `start` answers with these as JSON; the callback is a browser
 * navigation, so it redirects to the sign-in page with the code (`/signin#sso_error=CODE`), which
 * the page turns into its own words: a link cannot make the page show text of its choosing.
 */
export const SsoErrors = defineErrors({
  unknownProvider: [404, 'not_found', 'No single sign-on provider with this id is configured'],
  providerUnreachable: [
    502,
    'provider_unreachable',
    "The sign-in provider's discovery document could not be read: try again later",
  ],
  providerError: [400, 'provider_error', 'The provider did not sign you in'],
  stateMismatch: [400, 'state_mismatch', 'This sign-in was not started in this browser: start it again'],
  stateInvalid: [400, 'state_invalid', 'This sign-in is unknown, expired or already used: start it again'],
  tokenInvalid: [401, 'token_invalid', "The provider's answer did not verify"],
  emailMissing: [403, 'email_missing', 'The provider gave no e-mail address'],
  emailUnverified: [403, 'email_unverified', 'The provider has not verified your e-mail address'],
  domainNotAllowed: [403, 'domain_not_allowed', "Your e-mail's domain may not sign in with this provider"],
});

/** The codes the callback may send the sign-in page. */
export type SsoErrorCode =
  | 'provider_error'
  | 'provider_unreachable'
  | 'state_mismatch'
  | 'state_invalid'
  | 'token_invalid'
  | 'email_missing'
  | 'email_unverified'
  | 'domain_not_allowed'
  | 'server_error';
