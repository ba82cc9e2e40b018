// Formatting shared by the trust pages: numbers as the API gives them, and problem categories in
// words.
import type { ReportProblem } from '../../../src/client/client';

/** A number to `digits` decimals; a dash for none. */
export const fixed = (n: number | null | undefined, digits: number): string =>
  n === null || n === undefined ? '—' : n.toFixed(digits);

const PROBLEMS: Record<ReportProblem, string> = {
  offline: 'offline',
  start_failed: 'start failed',
  slow: 'slow',
  gpu: 'GPU',
  network: 'network',
  disk: 'disk',
  other: 'other',
};

export const problemText = (p: string): string => PROBLEMS[p as ReportProblem] ?? p;
