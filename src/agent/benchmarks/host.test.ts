// The host part of the benchmarks: the facts read from /proc and /etc, and the measurements in a
// worker thread, which leave the agent's event loop free.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuArch, cpuGhz, hasAvx, measureHost, ubuntuVersion } from './host.js';

describe('host facts', () => {
  it('reads AVX from the flags of /proc/cpuinfo', () => {
    expect(hasAvx('processor\t: 0\nflags\t\t: fpu vme sse4_2 avx avx2 fma\n')).toBe(true);
    expect(hasAvx('processor\t: 0\nflags\t\t: fpu vme sse4_2 avx512f\n')).toBe(false);
    expect(hasAvx('')).toBe(false);
  });

  it("reads Ubuntu's release from /etc/os-release, nothing from another system", () => {
    expect(ubuntuVersion('NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\n')).toBe('22.04');
    expect(ubuntuVersion('PRETTY_NAME="Debian GNU/Linux 12"\nVERSION_ID="12"\nID=debian\n')).toBe('');
  });

  it('names the architecture as Debian does, and the clock from cpufreq first', () => {
    expect(cpuArch('x64')).toBe('amd64');
    expect(cpuArch('arm64')).toBe('arm64');
    expect(cpuGhz('3500000\n', [])).toBe(3.5);
    expect(cpuGhz(null, [{ speed: 2450 } as os.CpuInfo])).toBe(2.5);
    // A virtual machine: no cpufreq, os.cpus() says 0, /proc/cpuinfo has each core's clock.
    const vm = 'processor\t: 0\ncpu MHz\t\t: 2100.000\nprocessor\t: 1\ncpu MHz\t\t: 2095.5\n';
    expect(cpuGhz(null, [{ speed: 0 } as os.CpuInfo], vm)).toBe(2.1);
    expect(cpuGhz(null, [{ speed: 0 } as os.CpuInfo], '')).toBe(0);
  });
});

describe('measureHost', () => {
  it('measures CPU, memory and disk in a worker while the event loop keeps running', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'openrig-bench-'));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t = performance.now();
    const f = await measureHost(dir, { cpuMs: 300, memMs: 100, diskBytes: 8 * 1024 * 1024 });
    clearInterval(timer);
    const ms = performance.now() - t;
    expect(f.cpu_score).toBeGreaterThan(0);
    expect(f.mem_bw).toBeGreaterThan(0);
    expect(f.disk_bw).toBeGreaterThan(0);
    // The worker ran for at least its CPU and memory time; the loop ticked through most of it.
    expect(ms).toBeGreaterThanOrEqual(400);
    expect(ticks).toBeGreaterThan((ms / 10) * 0.3);
  });
});
