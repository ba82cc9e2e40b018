// Gateway errors of its JSON routes (the proxied traffic answers GatewayError, gateway.tunnels.ts).
import { defineErrors } from '../../errors.js';

export const GatewayErrors = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such instance of yours'],
  noPort: [409, 'no_such_port', 'The instance serves no such port through the gateway'],
});
