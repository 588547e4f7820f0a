/**
 * Demo mode (the embedded default, or DNSPLANE_DEMO=true): the in-process OVH simulator holding the
 * demo zone, and the demo's two tenants, "admin" and "demo". Part of the composition root, beside
 * server/server.ts.
 *
 * Safety, because a demo start can meet a real database (DNSPLANE_DEMO=true with DATABASE_URL):
 * - the demo zone is never registered in a database that already manages other zones;
 * - the demo creates its tenants with a mark (tenants.demo) and only ever rotates marked ones: an
 *   "admin" tenant somebody else made is left alone and gets no demo token.
 *
 * Stable across restarts: the tokens are kept in the data directory (DEMO_TOKENS_FILE, mode 0600;
 * the database keeps only their hashes, as for every token) and reused while they still match, so
 * the tour's commands keep working; `serve --new-tokens` issues new ones. The simulator's DNS port
 * is kept there too and asked for again (another free port when it is taken meanwhile), and so is
 * the key that seals secrets at rest (SECRETS_KEY_FILE, 0600) when DNSPLANE_SECRETS_KEY is not set.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { SecretBox, newSecretsKey } from '../core/keys/secrets.js';
import { createTenant, rotateTenantToken } from '../core/tenants/tenants.js';
import { parseSecretsKey } from '../config/config.js';
import { hashToken } from '../core/keys/tokens.js';
import { OvhSimulator, type Lag } from '../ovhsim/index.js';
import * as store from '../store/index.js';
import { messageOf } from '../lib/error-message.js';

export const DEMO_ZONE = 'example.test';
/** In the data directory: the demo's tokens ({"admin": …, "demo": …}), mode 0600. */
export const DEMO_TOKENS_FILE = 'demo-tokens.json';
/** In the data directory: demo mode's key for secrets at rest (base64), mode 0600. */
export const SECRETS_KEY_FILE = 'secrets-key';
/** In the data directory: the simulator's DNS port of the last demo start. */
const DNS_PORT_FILE = path.join('ovhsim', 'dns-port');

/** The demo's tenants: name, zones, admin. */
const DEMO_TENANTS = [
  { name: 'admin', zones: [] as string[], admin: true },
  { name: 'demo', zones: [DEMO_ZONE], admin: false },
] as const;

export class DemoRefusedError extends Error {
  override readonly name = 'DemoRefusedError';
}

/**
 * Refuses the demo on a database that manages other zones, before anything is written to it (the
 * migrations included).
 */
export async function checkDemoDatabase(pool: pg.Pool, databaseLabel: string): Promise<void> {
  const others = await store.zonesOtherThan(pool, DEMO_ZONE);
  if (others.length === 0) return;
  const shown = others.slice(0, 5).join(', ') + (others.length > 5 ? `, … (${others.length} in all)` : '');
  throw new DemoRefusedError(
    `demo mode: ${databaseLabel} already manages other zones (${shown}); the demo will not register ${DEMO_ZONE} ` +
      'beside them nor answer for them from a simulator. Set the OVH_* credentials (and unset DNSPLANE_DEMO) to serve this database, ' +
      'or run the demo on a database of its own (unset DATABASE_URL for the embedded one).',
  );
}

/**
 * Starts the demo's simulator, with its state and its DNS port of the previous start (when that port is
 * free); its two name servers answer each refresh after `propagation` (DNSPLANE_SIM_PROPAGATION), as OVH's do.
 */
export async function startDemoSimulator(dataDir: string, log: Logger, propagation: Lag = 0): Promise<OvhSimulator> {
  const stateFile = path.join(dataDir, 'ovhsim', 'state.json');
  // Both name servers' ports are kept (the file: "port1 port2"; a file of one port, from before, keeps the first).
  return onKeptPorts(
    path.join(dataDir, DNS_PORT_FILE),
    2,
    ([dnsPort, second]) => OvhSimulator.start({ stateFile, zones: { [DEMO_ZONE]: [] }, dnsPort, dnsPorts: [dnsPort!, second!], propagation }),
    (sim) => sim.dnsServers.map((s) => s.port),
    log,
    'the simulator DNS ports',
  );
}

/**
 * Starts something on the port `file` kept from the previous start (another free port when that one
 * is taken meanwhile, or on the first start), and keeps the port it got. The demo's ports stay the
 * same across restarts, so the commands its banner printed keep working.
 */
export async function onKeptPort<T>(file: string, start: (port: number) => Promise<T>, portOf: (started: T) => number, log: Logger, what: string): Promise<T> {
  return onKeptPorts(
    file,
    1,
    ([port]) => start(port!),
    (started) => [portOf(started)],
    log,
    what,
  );
}

/**
 * onKeptPort for something on `count` ports, kept together in one file (space-separated): when any of
 * them is taken, all are chosen again (0 each: the OS picks); a port missing from the file is 0.
 * `start` must leave nothing behind when it fails (it is called again).
 */
export async function onKeptPorts<T>(
  file: string,
  count: number,
  start: (ports: number[]) => Promise<T>,
  portsOf: (started: T) => number[],
  log: Logger,
  what: string,
): Promise<T> {
  const text = (await fs.readFile(file, 'utf8').catch(() => '')).trim();
  const saved = Array.from({ length: count }, (_, i) => {
    const n = Number(text.split(/\s+/)[i]);
    return Number.isInteger(n) && n > 0 && n < 65536 ? n : 0;
  });
  const none = saved.map(() => 0);
  let started: T;
  if (saved.some((p) => p > 0)) {
    try {
      started = await start(saved);
    } catch (e) {
      log.warn(
        { ports: saved, err: messageOf(e) },
        `demo: ${what} of the last start ${count === 1 ? 'is' : 'are'} taken; using ${count === 1 ? 'another one' : 'others'}`,
      );
      started = await start(none);
    }
  } else {
    started = await start(none);
  }
  const ports = portsOf(started);
  if (ports.join(' ') !== saved.join(' ')) {
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, `${ports.join(' ')}\n`);
  }
  return started;
}

/** In the data directory: the DNS door's port of the last demo start. */
export const DNS_DOOR_PORT_FILE = 'dns-port';

export interface DemoTokens {
  /** Absent when a tenant of that name exists that the demo did not create (left alone). */
  admin?: string;
  demo?: string;
  /** Names of tenants the demo found and did not create: never rotated, no token shown. */
  leftAlone: string[];
  /** True when every token shown is the one kept from a previous start. */
  kept: boolean;
}

/**
 * The demo's tokens: the kept ones while they still match (and `newTokens` is false), else new ones
 * (a demo tenant created, or a marked one rotated). Writes the data directory's token file.
 */
export async function demoTokens(pool: pg.Pool, dataDir: string, opts: { newTokens: boolean; log: Logger }): Promise<DemoTokens> {
  const file = path.join(dataDir, DEMO_TOKENS_FILE);
  const kept = await readPrivateFile(file, opts.log, 'token file');
  const out: Record<string, string> = {};
  const leftAlone: string[] = [];
  let changed = false;
  for (const t of DEMO_TENANTS) {
    const mark = await store.demoMarkOf(pool, t.name);
    if (mark === 'foreign') {
      leftAlone.push(t.name);
      opts.log.warn({ tenant: t.name }, 'demo: a tenant of this name exists that the demo did not create: left alone, no demo token for it');
      continue;
    }
    if (mark === 'absent') {
      out[t.name] = await store.withTransaction(pool, async (tx) => {
        const { token } = await createTenant(tx, { name: t.name, zones: [...t.zones], admin: t.admin });
        await store.markDemoTenant(tx, t.name);
        return token;
      });
      changed = true;
      continue;
    }
    const old = kept[t.name];
    if (!opts.newTokens && old !== undefined && (await store.findTenantByTokenHash(pool, hashToken(old)))?.name === t.name) {
      out[t.name] = old;
      continue;
    }
    out[t.name] = (await rotateTenantToken(pool, t.name)).token;
    changed = true;
  }
  if (changed || Object.keys(kept).some((k) => out[k] !== kept[k])) await writePrivateFile(file, out);
  return { admin: out['admin'], demo: out['demo'], leftAlone, kept: !changed };
}

/** The string members of a JSON file of the data directory kept 0600 (tightened when looser); {} when absent or unreadable. */
export async function readPrivateFile(file: string, log: Logger, what: string): Promise<Record<string, string>> {
  let text: string;
  try {
    const stat = await fs.stat(file);
    if ((stat.mode & 0o077) !== 0) {
      await fs.chmod(file, 0o600);
      log.warn({ file }, `demo: tightened the mode of the ${what} to 0600`);
    }
    text = await fs.readFile(file, 'utf8');
  } catch {
    return {};
  }
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return {};
    return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    log.warn({ file }, `demo: the ${what} is unreadable; issuing new ones`);
    return {};
  }
}

/** Written to a temporary file created 0600, then renamed over: never readable by others, never half-written. */
export async function writePrivateFile(file: string, tokens: Record<string, string>): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.rm(tmp, { force: true });
  await fs.writeFile(tmp, `${JSON.stringify(tokens, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
  await fs.rename(tmp, file);
}

/**
 * The box that seals secrets at rest: DNSPLANE_SECRETS_KEY when set; in demo mode, else, the key kept
 * in the data directory (made at the first need); otherwise none (no TSIG key can be made or used).
 */
export async function secretBoxFor(config: Config, log?: Logger): Promise<SecretBox | undefined> {
  if (config.secretsKeys) return new SecretBox(config.secretsKeys);
  if (config.ovh.mode !== 'simulator') return undefined;
  return new SecretBox(await demoSecretsKey(config.dataDir, log));
}

/**
 * Demo mode's encryption key, from SECRETS_KEY_FILE of the data directory; made when there is none.
 * Never replaced: an unreadable file is an error (a new key would orphan every secret sealed so far).
 */
export async function demoSecretsKey(dataDir: string, log?: Logger): Promise<Buffer> {
  const file = path.join(dataDir, SECRETS_KEY_FILE);
  const read = async (): Promise<Buffer | undefined> => {
    let text: string;
    try {
      const stat = await fs.stat(file);
      if ((stat.mode & 0o077) !== 0) {
        await fs.chmod(file, 0o600);
        log?.warn({ file }, 'demo: tightened the mode of the secrets key file to 0600');
      }
      text = await fs.readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    return parseSecretsKey(text.trim(), file);
  };
  const kept = await read();
  if (kept) return kept;
  // Written whole to a 0600 temporary file, then linked in place: link() fails when another process
  // (a serve and a CLI command starting at once) made the file first, and then its key is the key.
  await fs.mkdir(dataDir, { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await fs.writeFile(tmp, `${newSecretsKey().toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  try {
    await fs.link(tmp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await fs.rm(tmp, { force: true });
  }
  const made = await read();
  if (!made) throw new Error(`demo: ${file} vanished while it was being made`);
  return made;
}
