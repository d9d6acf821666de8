/**
 * CPU time of every process on the machine, by what it is (Linux `/proc`; elsewhere nothing), so a
 * throughput figure can say where a call's CPU went: the gateway's runtime, PostgreSQL, Portkey, the
 * bench's own process (the clients, the mock upstream, the database proxy) or the kernel's threads
 * (its disk writeback among them).
 */
import { readdirSync, readFileSync } from 'node:fs';

export const cpuGroups = ['workerd', 'postgres', 'portkey', 'bench process', 'kernel', 'other'] as const;
export type CpuGroup = (typeof cpuGroups)[number];

/** Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux). */
const ticksPerSecond = 100;

/** Ticks of user and system CPU each process has used, by pid, with its group. */
export type CpuSnapshot = Map<number, { group: CpuGroup; ticks: number }>;

export function cpuSnapshot(): CpuSnapshot {
  const snapshot: CpuSnapshot = new Map();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return snapshot;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      // Fields after the name: state is the first; utime and stime are the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      snapshot.set(Number(pid), { group: groupOf(Number(pid), name, commandLine), ticks });
    } catch {
      // The process ended meanwhile.
    }
  }
  return snapshot;
}

function groupOf(pid: number, name: string, commandLine: string): CpuGroup {
  if (pid === process.pid) return 'bench process';
  if (commandLine === '') return 'kernel';
  if (name === 'workerd') return 'workerd';
  if (name === 'postgres') return 'postgres';
  if (commandLine.includes('portkey')) return 'portkey';
  return 'other';
}

/** Milliseconds of CPU each group used between two snapshots (a process new in `after` counts whole). */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): Record<CpuGroup, number> {
  const used = Object.fromEntries(cpuGroups.map((group) => [group, 0])) as Record<CpuGroup, number>;
  for (const [pid, now] of after) {
    const ticks = now.ticks - (before.get(pid)?.ticks ?? 0);
    if (ticks > 0) used[now.group] += (ticks * 1000) / ticksPerSecond;
  }
  return used;
}
