// The benchmarks routes (docs/benchmarks.md): the agent's runs and network measurements (the
// host's key, scope machines write), `search benchmarks` (offers read, as search offers), and a
// host's view of its machine's verification (machines read). Thin: one service call each.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.types.js';
import { requireAuth } from '../../http/auth.js';
import { registerRoutes, route } from '../../http/route.js';
import * as C from '../../../contract/schemas/benchmarks.js';
import type { BenchmarkReport } from '../../../contract/benchmarks.js';
import { NET_BENCH_MAX_BYTES } from '../../../contract/benchmarks.js';
import {
  hostMachineVerification,
  netDownload,
  postBenchmarks,
  searchBenchmarks,
} from './benchmarks.service.js';

const agentCfg = { scope: 'machines', access: 'write' } as const;

export const postBenchmarksRoute = route(C.postBenchmarks)({
  config: agentCfg,
  handler: (deps) => async (req) => postBenchmarks(deps, requireAuth(req), req.body as BenchmarkReport),
});

export const netDownloadRoute = route(C.netDownload)({
  config: agentCfg,
  options: { logLevel: 'warn' },
  handler: () => async (req) => {
    const bytes = req.query.bytes;
    return netDownload(bytes);
  },
});

export const netUploadRoute = route(C.netUpload)({
  config: agentCfg,
  // The upload is its body: up to NET_BENCH_MAX_BYTES characters of JSON string.
  options: { bodyLimit: NET_BENCH_MAX_BYTES + 1024, logLevel: 'warn' },
  handler: () => async (req) => ({ bytes: req.body.data.length }),
});

export const searchBenchmarksRoute = route(C.searchBenchmarks)({
  config: { scope: 'offers', access: 'read' },
  handler: (deps) => async (req) => {
    requireAuth(req);
    return searchBenchmarks(deps, req.query);
  },
});

export const machineVerificationRoute = route(C.machineTrust)({
  config: { scope: 'machines', access: 'read' },
  handler: (deps) => async (req) => hostMachineVerification(deps, requireAuth(req), req.params.id),
});

export const benchmarksRouteList = [
  postBenchmarksRoute,
  netDownloadRoute,
  netUploadRoute,
  searchBenchmarksRoute,
  machineVerificationRoute,
];

export async function benchmarksRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  registerRoutes(app, deps, benchmarksRouteList);
}
