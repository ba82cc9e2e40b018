// Trust errors: reliability and renter reports (docs/trust.md).
import { defineErrors } from '../../errors.js';

export const TrustErrors = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such machine'],
  notHost: [
    403,
    'forbidden',
    "Only the machine's host and the operator see its reports and the parts of its reliability",
  ],
  notRenter: [
    403,
    'not_a_renter',
    'Only a renter with an instance on this machine (live, or destroyed in the last 30 days) can report a problem with it',
  ],
  alreadyReported: [
    409,
    'already_reported',
    'You have already reported this machine today (UTC); one report per renter per machine per day',
  ],
});
