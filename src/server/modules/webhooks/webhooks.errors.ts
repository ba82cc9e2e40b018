// Error codes of webhooks and the event feed.
import { defineErrors } from '../../errors.js';

export const WebhookErrors = defineErrors({
  notFound: [404, 'not_found', 'No such webhook'],
  deliveryNotFound: [404, 'not_found', 'No such delivery'],
  badUrl: [400, 'bad_request', 'url must be an absolute https:// URL'],
  badEvents: [
    400,
    'bad_request',
    'events must be a non-empty list of event types or prefixes such as instance.*',
  ],
  tooMany: [400, 'bad_request', 'At most 20 webhooks per account'],
  badCursor: [400, 'bad_request', 'after must be the id of one of your events from the last 30 days'],
  badTypes: [
    400,
    'bad_request',
    'types must be a comma-separated list of event types or prefixes such as instance.*',
  ],
  disabled: [409, 'conflict', 'The webhook is disabled; enable it first'],
});
