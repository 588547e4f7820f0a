/**
 * bench/slow-clients — what slow and silent clients hold (`npm run bench:slow`; not part of `npm test`).
 *
 * A real `dnsplane serve` (a child process) with its settings at their defaults (or the ones given
 * below), real Postgres, the OVH simulator. SLOW_CONNECTIONS connections to each HTTP port (the API,
 * the webhook) each send half a request header (`POST /x HTTP/1.1\r\nHost: x\r\n`) and then nothing.
 * Every SLOW_EVERY seconds the bench prints how many of them the server still holds open, and how long
 * a good client's GET /healthz took meanwhile; it stops at SLOW_WAIT seconds. With the defaults
 * (DNSPLANE_HEADERS_TIMEOUT 20 s) every such connection should be closed by ~21 s.
 *
 *   SLOW_CONNECTIONS   per port, default 100
 *   SLOW_WAIT          seconds watched, default 40
 *   SLOW_EVERY         seconds between lines, default 5
 *   SLOW_SEND          what each sends: half-header (default), request-line, half-body, nothing
 *   DNSPLANE_*         passed to the server (e.g. DNSPLANE_HEADERS_TIMEOUT=3s)
 *   DATABASE_URL       a Postgres server to create the bench database on (dropped at the end)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { OvhSimulator } from '../src/ovhsim/index.js';
import { simulatorEnv } from '../test/helpers/sim-server.js';
import { benchDatabaseOrEmbedded, positiveEnv, startServerProcess, writeSimulatorCa, type ServerProcess } from './lib.js';

const CONNECTIONS = Math.floor(positiveEnv('SLOW_CONNECTIONS', 100));
const WAIT_S = positiveEnv('SLOW_WAIT', 40);
const EVERY_S = positiveEnv('SLOW_EVERY', 5);
const SEND = process.env['SLOW_SEND'] ?? 'half-header';
const PAYLOADS: Record<string, string> = {
  'half-header': 'POST /x HTTP/1.1\r\nHost: x\r\n',
  'request-line': 'GET /healthz HTTP/1.1\r\n',
  'half-body': 'POST /records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a',
  nothing: '',
};
const ZONE = 'slow.bench';

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** A connection that sends `payload` and then nothing; `open` until the server closes it. */
function slowClient(port: number, payload: string): { open: () => boolean; closedAt: () => number | undefined; destroy(): void } {
  let closedAt: number | undefined;
  const s = net.connect(port, '127.0.0.1', () => payload && s.write(payload));
  s.on('data', () => undefined);
  s.on('error', () => undefined);
  s.on('close', () => (closedAt = performance.now()));
  return { open: () => closedAt === undefined, closedAt: () => closedAt, destroy: () => s.destroy() };
}

async function healthzMs(url: string): Promise<string> {
  const started = performance.now();
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) });
    await res.text();
    return `${Math.round(performance.now() - started)} ms (${res.status})`;
  } catch (e) {
    return `failed (${(e as Error).name})`;
  }
}

async function main(): Promise<void> {
  const payload = PAYLOADS[SEND];
  if (payload === undefined) throw new Error(`SLOW_SEND: one of ${Object.keys(PAYLOADS).join(', ')}`);
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-slow-'));
  const db = await benchDatabaseOrEmbedded('bench_slow', path.join(dir, 'pg'));
  const sim = await OvhSimulator.start({ zones: { [ZONE]: [] } });
  let child: ServerProcess | undefined;
  try {
    const passed = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('DNSPLANE_')) as [string, string][]);
    child = await startServerProcess({
      DATABASE_URL: db.url,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: '127.0.0.1:0',
      DNSPLANE_ZONES: ZONE,
      DNSPLANE_DRIFT_INTERVAL: 'off',
      DNSPLANE_LOG_LEVEL: 'info',
      ...simulatorEnv(sim, writeSimulatorCa(sim, dir)),
      ...passed,
    });
    const ports = { api: Number(new URL(child.url).port), webhook: Number(new URL(child.webhookUrl!).port) };
    say(
      `bench/slow-clients — ${availableParallelism()} CPUs, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; dnsplane serve as a child process`,
    );
    say(
      `settings: ${
        Object.keys(passed).length
          ? Object.entries(passed)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')
          : 'defaults (DNSPLANE_HEADERS_TIMEOUT 20s, DNSPLANE_REQUEST_TIMEOUT 60s, DNSPLANE_IDLE_TIMEOUT 65s)'
      }`,
    );
    say(`${CONNECTIONS} connections per port, each sending ${SEND} (${JSON.stringify(payload)}) and then nothing`);
    say('');
    const started = performance.now();
    const clients = {
      api: Array.from({ length: CONNECTIONS }, () => slowClient(ports.api, payload)),
      webhook: Array.from({ length: CONNECTIONS }, () => slowClient(ports.webhook, payload)),
    };
    say("   t | open on API | open on webhook | a good client's GET /healthz (API)");
    for (let t = EVERY_S; t <= WAIT_S; t += EVERY_S) {
      await new Promise((r) => setTimeout(r, Math.max(0, started + t * 1000 - performance.now())));
      const open = (list: typeof clients.api) => list.filter((c) => c.open()).length;
      say(
        `${String(t).padStart(3)} s | ${String(open(clients.api)).padStart(11)} | ${String(open(clients.webhook)).padStart(15)} | ${await healthzMs(child.url)}`,
      );
    }
    for (const [name, list] of Object.entries(clients)) {
      const times = list
        .map((c) => c.closedAt())
        .filter((t): t is number => t !== undefined)
        .map((t) => (t - started) / 1000)
        .sort((a, b) => a - b);
      const still = list.length - times.length;
      say(
        `${name}: ${times.length} of ${list.length} closed by the server` +
          (times.length ? `, first at ${times[0]!.toFixed(1)} s, last at ${times[times.length - 1]!.toFixed(1)} s` : '') +
          `; ${still} still open at ${WAIT_S} s`,
      );
      for (const c of list) c.destroy();
    }
  } finally {
    await child?.stop();
    await sim.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
