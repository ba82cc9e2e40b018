// The e2e tier: the base settings with only this tier's files (scripts/test-tiers.mjs says which).
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { testFiles } from './scripts/test-tiers.mjs';

export default defineConfig({ ...base, test: { ...base.test, include: testFiles('e2e') } });
