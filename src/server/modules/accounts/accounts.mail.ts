// The e-mails of the accounts module: their subjects and texts, and nothing else.

/** Sign-in is locked until `until` after too many failures. */
export function lockedMail(until: number): { subject: string; text: string } {
  return {
    subject: 'Sign-in to your openrig account is locked',
    text:
      `There were too many failed sign-in attempts (passwords or 2FA codes) on your account. ` +
      `Sign-in is locked until ${new Date(until).toISOString()}; API keys you already have keep working.` +
      `\n\nIf this was not you, someone may know your password: change it once you can sign in.`,
  };
}

/** A sign-up's verification link: following it makes the account. */
export function signupMail(link: string, ttlS: number): { subject: string; text: string } {
  return {
    subject: 'Confirm your e-mail to create your openrig account',
    text:
      `Someone (we hope you) signed up for an openrig account with this e-mail address. ` +
      `Open this link within ${Math.round(ttlS / 60)} minutes to confirm it and create the account:\n\n${link}\n\n` +
      `If this was not you, ignore this e-mail: no account is made.`,
  };
}

/** A sign-up for an address that has an account already: said to the address only. */
export function alreadyRegisteredMail(resetHint: string): { subject: string; text: string } {
  return {
    subject: 'You already have an openrig account',
    text:
      `Someone (we hope you) tried to sign up with this e-mail address, which already has an ` +
      `openrig account. Sign in instead; if you forgot your password, ${resetHint}.\n\n` +
      `If this was not you, ignore this e-mail: nothing changed.`,
  };
}

/** A password reset link. */
export function resetMail(link: string, ttlS: number): { subject: string; text: string } {
  return {
    subject: 'Reset your openrig password',
    text:
      `Someone (we hope you) asked to reset the password of your openrig account. ` +
      `Open this link within ${Math.round(ttlS / 60)} minutes to choose a new one; it works once:\n\n${link}\n\n` +
      `If this was not you, ignore this e-mail: your password stays as it is.`,
  };
}

/** The password changed (by the account, or through a reset link). */
export function passwordChangedMail(how: 'changed' | 'reset'): { subject: string; text: string } {
  return {
    subject: 'Your openrig password was changed',
    text:
      `The password of your openrig account was ${how === 'reset' ? 'reset through an e-mailed link' : 'changed'}; ` +
      `its other sign-in sessions were ended. API keys keep working.\n\n` +
      `If this was not you, reset your password at once and revoke your API keys.`,
  };
}
