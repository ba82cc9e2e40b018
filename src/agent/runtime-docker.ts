// The Docker runtime: not available in this build. It exists so `--runtime docker` refuses
// clearly instead of pretending; a real one implements Runtime (runtime.ts) with the Engine API:
// prepare = pull `image` (with image_login) and create a volume of `disk` GB; start = create and
// start the container with env, CONTAINER_API_KEY and a published 22/tcp; stop = docker stop;
// destroy = remove container and volume; inspect = container state and port bindings.
import type { Runtime } from './runtime.js';

export class DockerRuntimeUnavailable extends Error {}

export function dockerRuntime(): Runtime {
  throw new DockerRuntimeUnavailable(
    'the docker runtime is not implemented in this build of openrig (no Docker engine is used); run the agent with --runtime process',
  );
}
