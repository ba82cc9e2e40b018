export type Tier = 'unit' | 'int' | 'e2e';
export const TIERS: Tier[];
export function tierOf(file: string): Tier;
export function testFiles(tier: Tier): string[];
