import { describe, expect, it } from 'vitest';
import { interpretReport, type InstanceReportIn, type ReportedRow } from './instance-report.js';

const row = (over: Partial<ReportedRow> = {}): ReportedRow => ({
  actual_status: 'running',
  intended_status: 'running',
  status_msg: 'running; SSH accepts connections',
  ssh_host: 'host.example',
  ssh_port: 2201,
  agent_state: 'running',
  config_generation: 2,
  ...over,
});
const ctx = { sshHost: 'host.example', restarting: false };
const running: InstanceReportIn = { state: 'running', status_msg: 'running', ssh_port: 2201, generation: 2 };
const ssh22 = (port: number) => ({ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: String(port) }] });

describe('interpretReport: an agent report read into moves of the row', () => {
  it('rule 1: a report of an older configuration generation moves nothing', () => {
    expect(interpretReport(row({ actual_status: 'loading' }), running, { ...ctx })).toEqual({
      kind: 'moves',
      moves: [
        {
          to: 'running',
          status_msg: 'running',
          ssh: { host: 'host.example', port: 2201, ports: ssh22(2201) },
        },
      ],
    });
    expect(interpretReport(row({ actual_status: 'loading', config_generation: 3 }), running, ctx)).toEqual({
      kind: 'ignore',
      rule: 'older-generation',
    });
    // A report without a generation (an older agent) is never outdated.
    const { generation: _, ...noGen } = running;
    expect(interpretReport(row({ actual_status: 'loading', config_generation: 3 }), noGen, ctx).kind).toBe(
      'moves',
    );
  });

  it('rule 2: running without an SSH port is loading', () => {
    const r = interpretReport(row({ actual_status: null }), { ...running, ssh_port: null }, ctx);
    expect(r).toEqual({ kind: 'moves', moves: [{ to: 'loading', status_msg: 'running' }] });
    // ... and so a loading row reads it as the same status, a new step at most.
    expect(
      interpretReport(
        row({ actual_status: 'loading', status_msg: 'running' }),
        { ...running, ssh_port: 0 },
        ctx,
      ),
    ).toEqual({
      kind: 'ignore',
      rule: 'unchanged',
    });
  });

  it('rule 3: a new step of a start under way writes only the step', () => {
    const loadingRow = row({ actual_status: 'loading', status_msg: 'pulling: 1/9 MB' });
    expect(interpretReport(loadingRow, { state: 'loading', status_msg: 'pulling: 5/9 MB' }, ctx)).toEqual({
      kind: 'step',
      status_msg: 'pulling: 5/9 MB',
    });
    // The same step, or none, is the usual heartbeat.
    expect(interpretReport(loadingRow, { state: 'loading', status_msg: 'pulling: 1/9 MB' }, ctx).kind).toBe(
      'ignore',
    );
    expect(interpretReport(loadingRow, { state: 'loading' }, ctx).kind).toBe('ignore');
  });

  it('rule 4: the status the row already has writes nothing, unless SSH moved', () => {
    expect(interpretReport(row(), running, ctx)).toEqual({ kind: 'ignore', rule: 'unchanged' });
    const stopped = row({
      actual_status: 'stopped',
      intended_status: 'stopped',
      status_msg: 'Stop requested',
    });
    expect(interpretReport(stopped, { state: 'stopped', status_msg: 'stopped' }, ctx)).toEqual({
      kind: 'ignore',
      rule: 'unchanged',
    });
    expect(interpretReport(row(), { ...running, ssh_port: 2202 }, ctx)).toEqual({
      kind: 'moves',
      moves: [
        {
          to: 'running',
          status_msg: 'running',
          ssh: { host: 'host.example', port: 2202, ports: ssh22(2202) },
        },
      ],
    });
    expect(interpretReport(row(), running, { ...ctx, sshHost: 'other.example' })).toMatchObject({
      kind: 'moves',
      moves: [{ to: 'running', ssh: { host: 'other.example', port: 2201 } }],
    });
  });

  it('rule 5: running from the old container while a reboot or recycle is pending is ignored', () => {
    const loadingRow = row({ actual_status: 'loading', status_msg: 'rebooting' });
    expect(interpretReport(loadingRow, running, { ...ctx, restarting: true })).toEqual({
      kind: 'ignore',
      rule: 'restart-pending',
    });
    expect(interpretReport(loadingRow, running, ctx).kind).toBe('moves');
  });

  it("rule 6: the agent's stale exited after a client's start does not undo the start", () => {
    const started = row({ actual_status: null, agent_state: 'exited', ssh_port: null });
    const exited: InstanceReportIn = { state: 'exited', status_msg: 'exit 1' };
    expect(interpretReport(started, exited, ctx)).toEqual({ kind: 'ignore', rule: 'stale-exited' });
    // Once the agent said something else (loading), a failure lands.
    expect(interpretReport({ ...started, agent_state: 'loading' }, exited, ctx)).toEqual({
      kind: 'moves',
      moves: [{ to: 'exited', status_msg: 'exit 1' }],
    });
  });

  it('rule 7: a quick start seen only running passes through loading where the state machine allows', () => {
    const viaLoading = (r: ReportedRow) => interpretReport(r, running, ctx);
    // From stopped after a client's start: stopped → running is refused, stopped → loading → running is not.
    expect(viaLoading(row({ actual_status: 'stopped', status_msg: 'Start requested' }))).toEqual({
      kind: 'moves',
      moves: [
        { to: 'loading', status_msg: 'starting' },
        {
          to: 'running',
          status_msg: 'running',
          ssh: { host: 'host.example', port: 2201, ports: ssh22(2201) },
        },
      ],
    });
    // From null the state machine takes running directly.
    expect(viaLoading(row({ actual_status: null, ssh_port: null }))).toMatchObject({
      moves: [{ to: 'running' }],
    });
    // Never from exited (it never reaches running by itself), nor when the client asked for a stop.
    expect(viaLoading(row({ actual_status: 'exited', agent_state: 'exited' }))).toMatchObject({
      moves: [{ to: 'running' }],
    });
    expect(viaLoading(row({ actual_status: 'stopped', intended_status: 'stopped' }))).toMatchObject({
      moves: [{ to: 'running' }],
    });
  });

  it('anything else is the reported status, for the state machine to apply or refuse', () => {
    expect(interpretReport(row(), { state: 'exited', status_msg: 'crashed' }, ctx)).toEqual({
      kind: 'moves',
      moves: [{ to: 'exited', status_msg: 'crashed' }],
    });
    expect(
      interpretReport(
        row({ actual_status: 'running', intended_status: 'stopped' }),
        { state: 'stopped' },
        ctx,
      ),
    ).toEqual({ kind: 'moves', moves: [{ to: 'stopped', status_msg: '' }] });
  });
});
