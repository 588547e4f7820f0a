/**
 * `dnsplane webhook`, the sidecar, as the real process: started the way a pod starts it (token from a
 * mounted file), driven by external-dns's client, stopped with SIGTERM. Also mutual TLS to the centre
 * (through a TLS front that demands a client certificate) and the argument errors.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { webhookCommand } from '../../src/cli/webhook.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import { generateCertificate } from '../../src/ovhsim/cert.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { ExternalDns, MEDIA_TYPE } from '../helpers/external-dns.js';
import { callLines } from '../helpers/expect.js';

const ZONE = 'example.com';
const ROOT = path.resolve(import.meta.dirname, '../..');
let h: Harness;
let token: string;
let dir: string;

const calls = (): string[] => callLines(h.sim);

interface Running {
  child: ChildProcessWithoutNullStreams;
  url: string;
  output: () => string;
  stop(): Promise<number | null>;
}

/**
 * Every sidecar process group started and not yet gone. afterEach kills what a test left running —
 * one that failed or timed out before its own stop() — so no `dnsplane webhook` outlives its test.
 */
const running = new Map<ChildProcessWithoutNullStreams, Promise<number | null>>();

/** SIGKILL to the child's process group (the sidecar and anything it started), then its exit. */
async function killGroup(child: ChildProcessWithoutNullStreams, exited: Promise<number | null>): Promise<void> {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // already gone (ESRCH)
  }
  await exited;
}

afterEach(async () => {
  await Promise.all([...running].map(([child, exited]) => killGroup(child, exited)));
});

// The worker exiting while a sidecar still runs (an error outside any test): the same, synchronously.
process.once('exit', () => {
  for (const child of running.keys()) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Starts `node bin/dnsplane-dev.js webhook ARGS` (its own process group) and waits for its "listening on" line. */
async function sidecar(args: string[], env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/dnsplane-dev.js'), 'webhook', '--listen', '127.0.0.1:0', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', DNSPLANE_LOG_LEVEL: 'info', ...env },
    detached: true,
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  running.set(child, exited);
  void exited.then(() => running.delete(child));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearInterval(timer);
        resolve(m[1]!);
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(timer);
      reject(new Error(`the sidecar exited (${code}) before listening:\n${out}`));
    });
  });
  return {
    child,
    url,
    output: () => out,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  token = await h.tenant('cluster', [ZONE]);
  dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-sidecar-'));
  writeFileSync(path.join(dir, 'token'), `${token}\n`);
});

afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => h.sim.clearCalls());

describe('dnsplane webhook (the sidecar process)', () => {
  it('serves external-dns with the token from a file, never prints it, and stops on SIGTERM', async () => {
    const s = await sidecar(['--server', h.server.url, '--token-file', path.join(dir, 'token')]);
    try {
      const edns = new ExternalDns(s.url);
      expect(await edns.negotiate()).toMatchObject({ include: [ZONE] });
      expect(edns.exchanges.at(-1)!.headers['content-type']).toBe(MEDIA_TYPE);
      const health = await fetch(`${s.url}/healthz`);
      expect([health.status, await health.text()]).toEqual([200, 'ok\n']);
      await edns.runOnce([{ dnsName: `web.${ZONE}`, targets: ['192.0.2.1'], recordType: 'A', recordTTL: 300 }]);
      expect(edns.exchanges.map((e) => `${e.method} ${e.path} ${e.status}`)).toEqual([
        'GET / 200',
        'GET /records 200',
        'POST /adjustendpoints 200',
        'POST /records 204',
      ]);
      const ids = h.sim
        .draftRecords(ZONE)
        .filter((r) => r.subDomain !== 'web')
        .map((r) => r.id);
      expect(calls().sort()).toEqual(
        [
          `GET /domain/zone/${ZONE}/record`,
          ...ids.map((id) => `GET /domain/zone/${ZONE}/record/${id}`),
          `GET /domain/zone/${ZONE}/soa`,
          `POST /domain/zone/${ZONE}/record`,
          `POST /domain/zone/${ZONE}/refresh`,
        ].sort(),
      );
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toMatch(/dnsplane_webhook_requests_total\{route="apply",status="204"\} 1/);
    } finally {
      expect(await s.stop()).toBe(0);
    }
    expect(s.output()).not.toContain(token);
  });

  it('takes DNSPLANE_TOKEN; a token the centre refuses is 401 to external-dns', async () => {
    const s = await sidecar(['--server', h.server.url], { DNSPLANE_TOKEN: `${token}nope` });
    try {
      const ex = await new ExternalDns(s.url).do('GET', '/records', { accept: MEDIA_TYPE });
      expect(ex.status).toBe(401);
      expect(ex.body).not.toContain(token);
      expect(calls()).toEqual([]);
    } finally {
      await s.stop();
    }
    expect(s.output()).not.toContain(token);
  });

  it('reaches the centre over mutual TLS with --ca-file, --cert-file and --key-file', async () => {
    const server = await generateCertificate('127.0.0.1');
    const client = await generate([{ name: 'commonName', value: 'sidecar' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, critical: true },
        { name: 'extKeyUsage', clientAuth: true },
      ],
    });
    for (const [name, pem] of Object.entries({ 'ca.pem': server.cert, 'client.pem': client.cert, 'client-key.pem': client.private }))
      writeFileSync(path.join(dir, name), pem);
    // A TLS front that demands the client certificate, then forwards to the centre.
    const seen: string[] = [];
    const front = https.createServer({ key: server.key, cert: server.cert, ca: [client.cert], requestCert: true, rejectUnauthorized: true }, (req, res) => {
      seen.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? ''));
      const up = http.request(new URL(req.url ?? '/', h.server.url), { method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const centre = `https://127.0.0.1:${(front.address() as AddressInfo).port}`;
    const withCert = await sidecar([
      '--server',
      centre,
      '--token-file',
      path.join(dir, 'token'),
      '--ca-file',
      path.join(dir, 'ca.pem'),
      '--cert-file',
      path.join(dir, 'client.pem'),
      '--key-file',
      path.join(dir, 'client-key.pem'),
    ]);
    const withoutCert = await sidecar(['--server', centre, '--token-file', path.join(dir, 'token'), '--ca-file', path.join(dir, 'ca.pem')]);
    try {
      const ok = new ExternalDns(withCert.url);
      expect((await ok.negotiate()).include).toEqual([ZONE]);
      expect((await ok.records()).map((e) => e.dnsName)).toEqual([`web.${ZONE}`]);
      expect(seen).toEqual(['sidecar', 'sidecar']);
      // No client certificate: the handshake fails, the centre is unreachable: 503, retried next loop.
      const ex = await new ExternalDns(withoutCert.url).do('GET', '/records', { accept: MEDIA_TYPE });
      expect(ex.status).toBe(503);
      expect(seen).toHaveLength(2);
    } finally {
      await withCert.stop();
      await withoutCert.stop();
      front.closeAllConnections();
      await new Promise((resolve) => front.close(resolve));
    }
  });

  it('refuses bad arguments, naming the option', async () => {
    const io: CliIo = { out: () => undefined, err: () => undefined, env: {}, isTty: false };
    await expect(webhookCommand.run(['--server', h.server.url], io)).rejects.toThrow(InvalidInputError);
    await expect(webhookCommand.run(['--server', h.server.url], io)).rejects.toThrow(/--token-file: a token is required/);
    await expect(webhookCommand.run(['--server', h.server.url, '--token-file', path.join(dir, 'token'), '--cert-file', 'x.pem'], io)).rejects.toThrow(
      /--key-file: --cert-file and --key-file go together/,
    );
    await expect(webhookCommand.run(['--server', h.server.url, '--token-file', path.join(dir, 'token'), '--listen', 'nope'], io)).rejects.toThrow(
      /--listen: must be host:port/,
    );
    await expect(webhookCommand.run(['--server', 'not a url', '--token-file', path.join(dir, 'token')], io)).rejects.toThrow(/--server: must be a URL/);
  });
});
