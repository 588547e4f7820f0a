/**
 * Real `dnsplane serve` processes for the multi-replica and crash tests: `node bin/dnsplane-dev.js serve`
 * on a free port, on a test database, talking to a simulator that runs in the test process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';
import { bearer, simulatorEnv } from './sim-server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A port nobody listens on right now (the OS picks it; a race with other programs is unlikely). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface ServeProcess {
  url: string;
  pid: number;
  /** What it printed (stdout and stderr), for failure messages. */
  output(): string;
  zoneClient(token: string): Client<typeof ZoneService>;
  /** SIGKILL: no shutdown, no rollback, connections cut. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export interface ServeOptions {
  databaseUrl: string;
  sim: OvhSimulator;
  zones: string[];
  env?: Record<string, string>;
}

/** Starts `dnsplane serve` and resolves once /readyz answers 200. */
export async function startServe(opts: ServeOptions): Promise<ServeProcess> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-proc-'));
  const caFile = path.join(dir, 'ca.pem');
  writeFileSync(caFile, opts.sim.caPem);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dir,
    DATABASE_URL: opts.databaseUrl,
    DNSPLANE_DATA_DIR: dir,
    DNSPLANE_LISTEN: `127.0.0.1:${port}`,
    DNSPLANE_ZONES: opts.zones.join(','),
    ...simulatorEnv(opts.sim, caFile),
    DNSPLANE_OVH_RATE: '1000',
    DNSPLANE_LOG_LEVEL: 'warn',
    DNSPLANE_WEBHOOK_LISTEN: 'off', // several processes: only the API port, which we pick
    ...opts.env,
  };
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'bin/dnsplane-dev.js'), 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const url = `http://127.0.0.1:${port}`;

  const deadline = Date.now() + 240_000; // a bound for a hang only: a loaded machine starts slowly
  for (;;) {
    if (gone) throw new Error(`dnsplane serve exited during start:\n${out}`);
    try {
      const res = await fetch(`${url}/readyz`);
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`dnsplane serve did not become ready:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const end = async (signal: NodeJS.Signals) => {
    if (!gone) child.kill(signal);
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  return {
    url,
    pid: child.pid ?? 0,
    output: () => out,
    zoneClient(token) {
      return createClient(ZoneService, createConnectTransport({ baseUrl: url, httpVersion: '1.1', interceptors: [bearer(token)] }));
    },
    kill: () => end('SIGKILL'),
    stop: () => end('SIGTERM'),
  };
}
