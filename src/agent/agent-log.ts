// Where the agent writes its lines: pino in the command, a journal that tees each instance's
// lines (instance-journal.ts), or a test's recorder.
export interface AgentLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}
