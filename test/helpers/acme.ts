/**
 * An offline ACME server for tests: Debian's pebble, with a TLS certificate made here, validating
 * DNS-01 challenges against a DNS server of our choosing (the simulator's, which serves what OVH
 * published), no sleeps (PEBBLE_VA_NOSLEEP), no nonce rejected on purpose (PEBBLE_WFE_NONCEREJECT=0).
 * Nothing leaves the machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateCertificate } from '../../src/ovhsim/cert.js';

/** A port free now (the OS picks it; pebble cannot be told port 0 and report the one it got). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Pebble {
  /** The ACME directory URL. */
  directory: string;
  /** The PEM file of pebble's TLS certificate (what a client must trust). */
  caFile: string;
  /** A scratch directory removed with close(). */
  dir: string;
  output(): string;
  close(): Promise<void>;
}

export async function startPebble(dnsServer: string): Promise<Pebble> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-pebble-'));
  const tls = await generateCertificate('127.0.0.1');
  const caFile = path.join(dir, 'cert.pem');
  writeFileSync(caFile, tls.cert);
  writeFileSync(path.join(dir, 'key.pem'), tls.key, { mode: 0o600 });
  // Three tries: a port found free can be taken by someone else before pebble binds it.
  for (let attempt = 1; ; attempt++) {
    const [listen, management, http, tlsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const config = path.join(dir, 'pebble.json');
    writeFileSync(
      config,
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${listen}`,
          managementListenAddress: `127.0.0.1:${management}`,
          certificate: caFile,
          privateKey: path.join(dir, 'key.pem'),
          httpPort: http,
          tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: false,
        },
      }),
    );
    const child = spawn('pebble', ['-config', config, '-dnsserver', dnsServer], {
      env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const ready = await new Promise<boolean>((resolve) => {
      const seen = (d: Buffer) => {
        out += d.toString();
        if (/ACME directory available at/.test(out)) resolve(true);
      };
      child.stdout!.on('data', seen);
      child.stderr!.on('data', seen);
      child.once('exit', () => resolve(false));
    });
    if (ready) {
      return {
        directory: `https://127.0.0.1:${listen}/dir`,
        caFile,
        dir,
        output: () => out,
        close: async () => {
          await stop(child);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    if (attempt >= 3) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pebble did not start:\n${out}`);
    }
  }
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
