import type { Command } from 'commander';

// The user commands (issue 8) register here.
export function registerUserCommands(_program: Command): void {}
