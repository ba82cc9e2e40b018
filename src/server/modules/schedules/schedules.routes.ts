// Scheduled jobs on /api/v0/commands/schedule_job/ (docs/scheduled-jobs.md). The `instances`
// family: read for GET, write for the rest (every job acts on an instance).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/schedules.js';
import { ScheduleErrors } from './schedules.errors.js';
import {
  createJob,
  deleteJob,
  jobRequestProblem,
  listJobs,
  listRuns,
  updateJob,
} from './schedules.service.js';

/** The request's rule broken, named before the schema's generic refusal. */
const precheck = () => (req: FastifyRequest) => {
  const problem = jobRequestProblem(req.body);
  if (problem) throw ScheduleErrors.badRequest(problem);
};

export const listScheduledJobs = route(C.listScheduledJobs)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => listJobs(deps, requireAuth(req)),
});

export const createScheduledJob = route(C.createScheduledJob)({
  config: { scope: 'instances' },
  precheck,
  handler: (deps) => async (req) => {
    const id = await createJob(deps, requireAuth(req), req.body);
    return { success: true, msg: `Scheduled job ${id} created`, scheduled_job_id: id };
  },
});

export const updateScheduledJob = route(C.updateScheduledJob)({
  config: { scope: 'instances' },
  precheck,
  handler: (deps) => async (req) => {
    await updateJob(deps, requireAuth(req), req.params.id, req.body);
    return { success: true, msg: `Scheduled job ${req.params.id} updated`, scheduled_job_id: req.params.id };
  },
});

export const deleteScheduledJob = route(C.deleteScheduledJob)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => {
    await deleteJob(deps, requireAuth(req), req.params.id);
    return { success: true, msg: `Scheduled job ${req.params.id} deleted` };
  },
});

export const listScheduledJobRuns = route(C.listScheduledJobRuns)({
  config: { scope: 'instances' },
  handler: (deps) => async (req) => ({
    success: true,
    runs: await listRuns(deps, requireAuth(req), req.params.id),
  }),
});

export const scheduleRouteList = [
  listScheduledJobs,
  createScheduledJob,
  updateScheduledJob,
  deleteScheduledJob,
  listScheduledJobRuns,
];

export async function schedulesRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, scheduleRouteList);
}
