// The official CLI's `self-test machine` rents the host's own machine with the marketplace's test
// image (`vastai/test`, a tag starting with `self-test`) and polls a service inside it. openrig
// serves no such image, so that rental could never pass and would only be billed: a create naming
// it is refused with 400 not_supported before anything is read, written or charged. On openrig the
// host's own agent benchmarks its machine (docs/benchmarks.md): its figures are the offer's,
// which the CLI's requirement check (a search offers) reads, and `search benchmarks` lists them.
import { CompatErrors } from './compat.errors.js';
import { notSupportedMsg } from './compat.unsupported.js';

export const SELF_TEST_COMMAND = 'self-test machine';

/** The marketplace's self-test image, with or without Docker Hub's registry name. */
const SELF_TEST_IMAGE =
  /^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)\/)?vastai\/test:self-?test/i;

const MSG = notSupportedMsg({
  method: 'PUT',
  path: '/api/v0/asks/:id',
  commands: [SELF_TEST_COMMAND],
  why:
    "it rents the machine with the marketplace's test image, which openrig does not serve; " +
    "openrig's agent benchmarks its own machine instead (search benchmarks; GET /api/v0/machines/ID/verification)",
});

/** Throws 400 not_supported when a create body names the marketplace's self-test image. */
export function refuseSelfTestCreate(body: unknown): void {
  if (body === null || typeof body !== 'object') return;
  const image = (body as Record<string, unknown>).image;
  if (typeof image === 'string' && SELF_TEST_IMAGE.test(image.trim())) throw CompatErrors.notSupported(MSG);
}
