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
