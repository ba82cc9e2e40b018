import { PERMISSION_FAMILIES } from '../../contract/permissions.js';
import { describe, expect, it } from 'vitest';
import { instanceDetail, instancesTable, maintsTable, offersTable, permissionsText } from './views.js';

const NOW = 1_800_000_000_000;

describe('tables with units', () => {
  it('offers: VRAM in whole GiB as the console shows it, RAM in GB from MB, $/hr, reliability in %, duration in days', () => {
    const out = offersTable([
      {
        id: 7,
        num_gpus: 2,
        gpu_name: 'RTX 4090',
        gpu_ram: 24_564,
        cpu_ram: 64_000,
        disk_space: 500,
        dph_total: 1.0123,
        reliability: 0.987,
        duration: 3 * 86_400,
        inet_up: 800,
        inet_down: 900,
        machine_id: 3,
      },
    ]);
    const [head, row] = out.split('\n');
    expect(head).toMatch(/^ID\s+GPUs\s+VRAM\s+CUDA/);
    expect(row).toMatch(/^ 7\s+2x RTX 4090\s+24 GB\s+-\s+-\s+64\.0 GB\s+500 GB\s+\$1\.0123\s/);
    expect(row).toContain('98.7%');
    expect(row).toContain('800/900 Mbps');
    expect(row).toContain('3.0 d');
  });

  it('instances: status with a pending change, ssh endpoint, start relative to now', () => {
    const out = instancesTable(
      [
        {
          id: 1,
          machine_id: 2,
          actual_status: 'running',
          intended_status: 'stopped',
          num_gpus: 1,
          gpu_name: 'A100',
          ssh_host: 'h',
          ssh_port: 2222,
          start_date: NOW / 1000 - 3600,
          label: 'x',
          dph_total: 0.5,
        },
        { id: 2, machine_id: 2, actual_status: null, intended_status: 'running' },
      ],
      NOW,
    );
    expect(out).toMatch(/^\s*1\s+2\s+running \(→ stopped\)\s+1x A100\s.*h:2222\s+1h ago\s+x$/m);
    expect(out).toMatch(/^\s*2\s+2\s+provisioning\s/m);
  });

  it("instances: the disk as used/size once the host measured it, the GPUs' utilisation", () => {
    const measured = {
      id: 3,
      machine_id: 2,
      actual_status: 'running',
      intended_status: 'running',
      disk_space: 20,
      disk_usage: 3.2456,
      disk_util: 0.16228,
      gpu_util: 37.5,
    };
    const fresh = {
      id: 4,
      machine_id: 2,
      actual_status: null,
      disk_space: 20,
      disk_usage: null,
      gpu_util: null,
    };
    const out = instancesTable([measured, fresh], NOW);
    const [head, ...rows] = out.trimEnd().split('\n');
    const diskAt = head!.indexOf('Disk');
    expect(diskAt).toBeGreaterThan(0);
    expect(rows[0]).toMatch(/\s38%\s.*\s3\.2\/20 GB\s/);
    expect(rows[1]).toMatch(/\s-\s.*\s20 GB\s/);
    const detail = instanceDetail(measured, NOW);
    expect(detail).toMatch(/^Disk:\s+20 GB \(3\.2 GB used, 16%\)$/m);
    expect(detail).toMatch(/^GPU util:\s+38%$/m);
    expect(instanceDetail(fresh, NOW)).toMatch(/^Disk:\s+20 GB$/m);
  });

  it('maintenance windows in UTC with relative start and duration', () => {
    const out = maintsTable(
      [
        {
          id: 4,
          machine_id: 9,
          start_time: NOW / 1000 + 7200,
          end_time: NOW / 1000 + 7200 + 5400,
          duration_hours: 1.5,
          maintenance_category: 'gpu',
        },
      ],
      NOW,
    );
    expect(out).toMatch(/^\s*4\s+9\s+gpu\s+2027-01-15 10:00 UTC\s+in 2h\s+2027-01-15 11:30 UTC\s+1h 30m$/m);
  });

  it('API key permissions read as full, read_only or family:access', () => {
    expect(permissionsText(undefined)).toBe('full');
    expect(permissionsText('full')).toBe('full');
    const all = Object.fromEntries(PERMISSION_FAMILIES.map((f) => [f, 'read']));
    expect(permissionsText(all)).toBe('read_only');
    expect(permissionsText({ instances: 'write', offers: 'read' })).toBe('instances:write,offers:read');
  });
});
