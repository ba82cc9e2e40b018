import type { Command } from 'commander';

// `openrig agent` (operator-contract "openrig agent"); the agent module fills it in.
export function registerAgentCommand(_program: Command): void {}
