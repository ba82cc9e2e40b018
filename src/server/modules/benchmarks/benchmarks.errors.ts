import { defineErrors } from '../../errors.js';

export const BenchmarkErrors = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such machine, or it is not yours'],
  notThisAgent: [
    404,
    'not_found',
    'No such machine of this agent: benchmarks are posted by the agent that registered the machine',
  ],
});
