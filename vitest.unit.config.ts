// The unit tier: the base settings with only this tier's files (scripts/test-tiers.mjs says which).
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { testFiles } from './scripts/test-tiers.mjs';

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: testFiles('unit'),
    // Unit tests hold no process-wide state (no vi.mock, no stubbed globals), so the files of a
    // worker share its module cache instead of reloading every import: about three times faster.
    isolate: false,
  },
});
