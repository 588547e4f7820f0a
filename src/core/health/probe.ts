/**
 * One check of one target: a TCP connection, or an HTTP(S) GET, to the target's own address (never a
 * host from the request: dns/health-check.ts has none), within a timeout. HTTP(S) sends Host = the
 * record's name; HTTPS sends it as SNI too. The certificate is NOT verified (as Route53's HTTPS checks
 * do not): the question is whether the target answers, and a certificate that expires or an internal
 * CA must not withdraw every target of a set at once. A 2xx or 3xx answer passes; anything else,
 * a refused or reset connection, or the timeout, fails. No body is read past its first chunk.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { checkUrlFor, type HealthCheck } from '../../dns/health-check.js';
import type { CheckAnswer } from '../reads/health-view.js';

export interface CheckTarget {
  check: HealthCheck;
  /** The target's address (an A or AAAA target of the set). */
  address: string;
  /** The record's name: Host (and SNI) of HTTP(S) checks. */
  name: string;
}

/** Checks one target; never throws. */
export function checkTarget(t: CheckTarget, timeoutMs: number, signal?: AbortSignal): Promise<CheckAnswer> {
  const started = performance.now();
  const at = new Date().toISOString();
  const done = (ok: boolean, result: string): CheckAnswer => ({ ok, result, ms: Math.round(performance.now() - started), at });
  return new Promise<CheckAnswer>((resolve) => {
    let settled = false;
    const finish = (ok: boolean, result: string, cleanup: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      cleanup();
      resolve(done(ok, result));
    };
    let cleanup: () => void = () => undefined;
    const timer = setTimeout(() => finish(false, `timeout after ${timeoutMs} ms`, cleanup), timeoutMs);
    const onAbort = () => finish(false, 'stopped', cleanup);
    signal?.addEventListener('abort', onAbort, { once: true });
    const { check, address, name } = t;
    if (check.scheme === 'tcp') {
      const socket = net.connect({ host: address, port: check.port });
      cleanup = () => socket.destroy();
      socket.once('connect', () => finish(true, 'connected', cleanup));
      socket.once('error', (e: NodeJS.ErrnoException) => finish(false, e.code ?? e.message, cleanup));
      return;
    }
    const host = name.startsWith('*.') ? name.slice(2) : name;
    const options: https.RequestOptions = {
      host: address,
      port: check.port,
      path: check.path,
      method: 'GET',
      headers: { host, 'user-agent': 'dnsplane-health-check', connection: 'close' },
      agent: false,
    };
    const req =
      check.scheme === 'https' ? https.request({ ...options, servername: net.isIP(host) ? '' : host, rejectUnauthorized: false }) : http.request(options);
    cleanup = () => req.destroy();
    req.once('response', (res) => {
      const status = res.statusCode ?? 0;
      finish(status >= 200 && status < 400, String(status), cleanup);
    });
    req.once('error', (e: NodeJS.ErrnoException) => finish(false, e.code ?? e.message, cleanup));
    req.end();
  });
}

/** The URL a check of this target uses (people, logs). */
export function describeCheck(t: CheckTarget): string {
  return checkUrlFor(t.check, t.address);
}
