/**
 * The owner lock of an embedded cluster, `<cluster dir>.lock` (pid, start time, a random token): two
 * dnsplane processes never drive one cluster. A lock whose process is gone (or whose pid now belongs
 * to another process) is taken over.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { errorCode, type LogFn } from '../internal.js';
import { isAlive, procStartTime } from './processes.js';

/** The cluster is driven by another live dnsplane process (`pid`): openDatabase may then share its server. */
export class EmbeddedInUseError extends Error {
  constructor(
    message: string,
    readonly pid: number,
  ) {
    super(message);
    this.name = 'EmbeddedInUseError';
  }
}

export interface OwnerLock {
  release(): Promise<void>;
  releaseSync(): void;
}

interface OwnerRecord {
  pid: number;
  start?: string;
  token: string;
}

function ownerAlive(owner: OwnerRecord): boolean {
  if (!isAlive(owner.pid)) return false;
  const start = procStartTime(owner.pid);
  // Where /proc exists the start time tells a reused pid (another container, a reboot) apart.
  return owner.start === undefined || start === undefined || start === owner.start;
}

/** Takes the lock file, or throws EmbeddedInUseError naming the live process that holds it. */
export async function acquireOwnerLock(file: string, log: LogFn): Promise<OwnerLock> {
  const me: OwnerRecord = { pid: process.pid, start: procStartTime(process.pid), token: randomBytes(8).toString('hex') };
  const mine = JSON.stringify(me);
  const releaseSync = (): void => {
    try {
      if (readFileSync(file, 'utf8') === mine) unlinkSync(file);
    } catch {
      // already gone
    }
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await fs.writeFile(file, mine, { flag: 'wx', mode: 0o600 });
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        releaseSync();
      };
      return { release: async () => release(), releaseSync: release };
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
    }
    let owner: OwnerRecord | undefined;
    try {
      owner = parseOwner(await fs.readFile(file, 'utf8'));
    } catch (err) {
      if (errorCode(err) === 'ENOENT') continue; // released meanwhile
      throw err;
    }
    if (owner && ownerAlive(owner)) {
      const who = owner.pid === process.pid ? 'this process' : `another dnsplane process (pid ${owner.pid})`;
      throw new EmbeddedInUseError(`embedded postgres: ${path.dirname(file)} is already in use by ${who}`, owner.pid);
    }
    log('embedded postgres: removing the lock of a previous run that is gone', { file, pid: owner?.pid });
    await fs.rm(file, { force: true });
  }
  throw new Error(`embedded postgres: could not take ${file}`);
}

function parseOwner(text: string): OwnerRecord | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && 'pid' in value && typeof value.pid === 'number') {
      const start = 'start' in value && typeof value.start === 'string' ? value.start : undefined;
      return { pid: value.pid, start, token: '' };
    }
  } catch {
    // unreadable: treat as stale
  }
  return undefined;
}
