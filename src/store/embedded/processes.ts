/**
 * What the operating system says about a process: alive or not (a zombie counts as gone), its start
 * time and working directory from Linux's /proc where there is one (kill(pid, 0) elsewhere).
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { errorCode } from '../internal.js';

/** starttime (field 22 of /proc/<pid>/stat), or undefined where /proc is not available. */
export function procStartTime(pid: number): string | undefined {
  const fields = procStatFields(pid);
  return fields?.[19];
}

/** Fields of /proc/<pid>/stat after the command name: [0] = state (field 3), [19] = starttime. */
function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (errorCode(err) !== 'EPERM') return false;
  }
  return procStatFields(pid)?.[0] !== 'Z'; // a zombie is gone for our purposes
}

/** The process's working directory, or undefined where /proc does not tell. */
export function procCwd(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

/** Whether the process was gone within timeoutMs (polled every 100 ms). */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}
