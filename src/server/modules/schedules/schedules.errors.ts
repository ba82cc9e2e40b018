// Scheduled-job errors. `exists` carries scheduled_job_id: the official CLI reads it from the 422
// and offers to replace that job (PUT /commands/schedule_job/{id}/).
import { defineErrors } from '../../errors.js';

export const ScheduleErrors = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  notFound: [404, 'not_found', 'No such scheduled job'],
  exists: [422, 'already_exists', 'A scheduled job for this command and instance already exists'],
});
