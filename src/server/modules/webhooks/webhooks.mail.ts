// The e-mails of the webhooks module: their subjects and texts, and nothing else.

/** An endpoint was disabled after five days of failed deliveries. */
export function disabledMail(id: number, url: string): { subject: string; text: string } {
  return {
    subject: 'openrig: a webhook was disabled',
    text: `Your webhook ${id} (${url}) was disabled: every delivery attempt to it failed for 5 days.\n\nEnable it again with PUT /api/v0/webhooks/${id}/ {"enabled": true} once it answers; missed events are in GET /api/v0/events/.\n`,
  };
}
