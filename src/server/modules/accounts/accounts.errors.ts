import { defineErrors } from '../../errors.js';

export const AccountErrors = defineErrors({
  badLogin: [401, 'auth_error', 'Invalid e-mail or password'],
  emailTaken: [409, 'email_taken', 'An account with this e-mail already exists'],
  badEmail: [400, 'bad_request', 'email must be a valid e-mail address'],
  notASession: [
    400,
    'bad_request',
    'This credential is an API key, not a session: revoke the key to end it (DELETE /api/v0/auth/apikeys/{id}/)',
  ],
  badPhone: [400, 'bad_request', 'phone must be an E.164 number such as +14155550123'],
  badSettings: [400, 'bad_request', 'Bad account update'],
  notYourAccount: [404, 'not_found', 'No such user: an account changes only its own settings'],
  signupDisabled: [
    403,
    'signup_disabled',
    'Sign-up is off on this installation: ask its operator for an account (OPENRIG_SIGNUP)',
  ],
  badPassword: [400, 'bad_request', 'password must be 8 to 256 characters'],
  wrongPassword: [400, 'wrong_password', 'current_password is not your password'],
  badToken: [400, 'invalid_token', 'This link is invalid, expired or already used: ask for a new one'],
});
