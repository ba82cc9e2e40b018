// The e-mails of the webhooks module: their subjects and texts, and nothing else.

/** An endpoint was disabled after five days of failed deliveries. */
export function disabledMail(id: number, url: string): { subject: string; text: string } {
  return {
    subject: 'openrig: a webhook was disabled',
    text: `Your webhook ${id} (${url}) was disabled: every delivery attempt to it failed for 5 days.\n\nEnable it again with PUT /api/v0/webhooks/${id}/ {"enabled": true} once it answers; missed events are in GET /api/v0/events/.\n`,
  };
}

/** The balance fell to the alert's threshold or below (balance.low). */
export function balanceLowMail(balance: number, threshold: number): { subject: string; text: string } {
  const usd = (n: number) => `$${n.toFixed(2)}`;
  return {
    subject: `openrig: your balance is ${usd(balance)}`,
    text:
      `Your openrig balance is ${usd(balance)}, at or below the ${usd(threshold)} you asked to be told about. ` +
      `Your running instances stop when it reaches $0.\n\n` +
      `The console's Billing page says how to add credit on this installation. ` +
      `Change or switch off this alert in your account settings (balance threshold).\n`,
  };
}
