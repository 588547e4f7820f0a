/**
 * The real DNS clients the DNS door is proved against (Debian's bind9-dnsutils, lego, certbot with
 * python3-certbot-dns-rfc2136, pebble), run asynchronously (the server under test runs in this process:
 * a synchronous child would stop it). Without a tool, the tests that need it are skipped, saying how to
 * install it; with CI=true a missing tool fails instead (.ci/run installs them).
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { describe, it } from 'vitest';

export const INSTALL = 'apt-get install -y bind9-dnsutils lego certbot python3-certbot-dns-rfc2136 pebble';
const IN_CI = Boolean(process.env['CI']) && process.env['CI'] !== 'false';

export function hasTool(name: string): boolean {
  for (const dir of ['/usr/bin', '/usr/sbin', '/usr/local/bin']) {
    try {
      accessSync(`${dir}/${name}`, constants.X_OK);
      return true;
    } catch {
      // next
    }
  }
  return false;
}

/** describe(), or a skipped (or, in CI, failing) placeholder when a tool is missing; `install` says how to get them. */
export function describeWithTools(tools: string[], title: string, body: () => void, install = INSTALL): void {
  const missing = tools.filter((t) => !hasTool(t));
  if (missing.length === 0) {
    describe(title, body);
    return;
  }
  if (IN_CI) {
    describe(title, () => {
      it(`needs ${missing.join(', ')}`, () => {
        throw new Error(`${missing.join(', ')} not found: ${install}`);
      });
    });
  } else {
    describe.skip(`${title} (${missing.join(', ')} not found: ${install})`, () => undefined);
  }
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (or kills it after `timeoutMs`), feeding `input` on stdin. */
export function run(cmd: string, args: string[], opts: { input?: string; env?: Record<string, string>; timeoutMs?: number; cwd?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...opts.env }, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** `nsupdate -y alg:name:secret` with a script; `-v` (TCP) when asked. */
export function nsupdate(key: { algorithm: string; name: string; secret: string } | undefined, script: string, opts: { tcp?: boolean } = {}): Promise<Run> {
  const args = [...(key ? ['-y', `${key.algorithm}:${key.name}:${key.secret}`] : []), ...(opts.tcp ? ['-v'] : [])];
  return run('nsupdate', args, { input: script });
}

/** `dig` against 127.0.0.1:port with a key, one try, short timeouts. */
export function dig(port: number, args: string[], key?: { algorithm: string; name: string; secret: string }): Promise<Run> {
  return run('dig', ['@127.0.0.1', '-p', String(port), '+tries=1', '+time=10', ...(key ? ['-y', `${key.algorithm}:${key.name}:${key.secret}`] : []), ...args]);
}

/** The status dig printed (`NOERROR`, `REFUSED`, …). */
export function digStatus(out: string): string | undefined {
  return /status: ([A-Z]+)/.exec(out)?.[1];
}
