/**
 * One check of one target (core/health/probe.ts) against real servers on loopback addresses: HTTP
 * with Host = the record's name, HTTPS to a self-signed target (SNI = the record's name; the
 * certificate is not verified, by design: docs/failover.md), TCP connect, and the failures — a
 * refused port, a 503, a target that never answers (the timeout).
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTarget } from '../../../src/core/health/probe.js';
import { parseHealthCheck } from '../../../src/dns/health-check.js';
import { generateCertificate } from '../../../src/ovhsim/cert.js';

const closers: Array<() => void> = [];
afterAll(() => {
  for (const c of closers) c();
});

async function listen(server: net.Server, address: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  closers.push(() => server.close());
  return (server.address() as AddressInfo).port;
}

const check = (url: string) => parseHealthCheck(url, 'check');

describe('checkTarget', () => {
  it('http: GET the path on the target address, Host = the record name; 2xx passes, 503 fails', async () => {
    const seen: string[] = [];
    const port = await listen(
      http.createServer((req, res) => {
        seen.push(`${req.headers.host} ${req.url}`);
        res.writeHead(req.url === '/healthz' ? 204 : 503).end();
      }),
      '127.0.0.4',
    );
    expect(await checkTarget({ check: check(`http://:${port}/healthz`), address: '127.0.0.4', name: 'www.example.com' }, 2000)).toMatchObject({
      ok: true,
      result: '204',
    });
    expect(await checkTarget({ check: check(`http://:${port}/other?x=1`), address: '127.0.0.4', name: 'www.example.com' }, 2000)).toMatchObject({
      ok: false,
      result: '503',
    });
    expect(seen).toEqual(['www.example.com /healthz', 'www.example.com /other?x=1']);
  });

  it('https: a self-signed target passes (not verified), SNI and Host are the record name', async () => {
    const tls = await generateCertificate();
    const sni: string[] = [];
    const server = https.createServer(
      {
        key: tls.key,
        cert: tls.cert,
        SNICallback: (name, cb) => {
          sni.push(name);
          cb(null, undefined);
        },
      },
      (req, res) => res.writeHead(200).end(req.headers.host),
    );
    const port = await listen(server, '127.0.0.5');
    expect(await checkTarget({ check: check(`https://:${port}/ready`), address: '127.0.0.5', name: 'api.example.com' }, 2000)).toMatchObject({
      ok: true,
      result: '200',
    });
    expect(sni).toEqual(['api.example.com']);
  });

  it('tcp: a connection passes; a refused port fails with its code', async () => {
    const port = await listen(
      net.createServer((s) => s.end()),
      '127.0.0.6',
    );
    expect(await checkTarget({ check: check(`tcp://:${port}`), address: '127.0.0.6', name: 'x.example.com' }, 2000)).toMatchObject({
      ok: true,
      result: 'connected',
    });
    expect(await checkTarget({ check: check(`tcp://:${port}`), address: '127.0.0.7', name: 'x.example.com' }, 2000)).toMatchObject({
      ok: false,
      result: 'ECONNREFUSED',
    });
  });

  it('a target that accepts and never answers fails at the timeout', async () => {
    const held: net.Socket[] = [];
    const port = await listen(
      net.createServer((s) => held.push(s)),
      '127.0.0.8',
    );
    closers.push(() => {
      for (const s of held) s.destroy();
    });
    const answer = await checkTarget({ check: check(`http://:${port}/healthz`), address: '127.0.0.8', name: 'x.example.com' }, 300);
    expect(answer).toMatchObject({ ok: false, result: 'timeout after 300 ms' });
    expect(answer.ms).toBeGreaterThanOrEqual(250);
  });
});
