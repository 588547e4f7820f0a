/**
 * Clients of the simulator for its own tests: trust its certificate, build a real @ovhcloud/node-ovh
 * client, and send raw (optionally signed) HTTPS requests to see what the node client hides (headers,
 * raw bodies).
 */
import { createHash } from 'node:crypto';
import https from 'node:https';
import ovh from '@ovhcloud/node-ovh';
import type { OvhClient, OvhClientParams, OvhClientRejection } from '@ovhcloud/node-ovh';
import type { OvhSimulator } from '../../src/ovhsim/index.js';
import { trustExtraCas } from '../../src/ovh/client/ca-trust.js';

/** Makes the global https agent (the one node-ovh uses) trust the simulator's certificate. */
export function trust(sim: OvhSimulator): void {
  trustExtraCas([sim.caPem]);
}

export function clientFor(sim: OvhSimulator, overrides: Partial<OvhClientParams> = {}): OvhClient {
  return ovh({
    host: '127.0.0.1',
    port: sim.apiPort,
    appKey: sim.credentials.applicationKey,
    appSecret: sim.credentials.applicationSecret,
    consumerKey: sim.credentials.consumerKey,
    ...overrides,
  });
}

/** The rejection of a node-ovh promise (it rejects with a plain object). */
export async function rejection(p: Promise<unknown>): Promise<OvhClientRejection> {
  try {
    await p;
  } catch (err) {
    return err as OvhClientRejection;
  }
  throw new Error('expected the call to fail');
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface RawOptions {
  body?: string;
  /** Sign the request; `url` chooses the signed URL form (default: the node client's, without port). */
  sign?: { url?: 'portless' | 'withPort'; secret?: string; timestamp?: number; body?: string };
  headers?: Record<string, string>;
}

/** A raw HTTPS request to the simulator; `path` includes /1.0 and the query. */
export function raw(sim: OvhSimulator, method: string, path: string, opts: RawOptions = {}): Promise<RawAnswer> {
  const headers: Record<string, string | number> = { ...opts.headers };
  const body = opts.body ?? '';
  if (body !== '') {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = Buffer.byteLength(body);
  }
  if (opts.sign) {
    const c = sim.credentials;
    const ts = opts.sign.timestamp ?? Math.round(Date.now() / 1000);
    const host = opts.sign.url === 'withPort' ? `127.0.0.1:${sim.apiPort}` : '127.0.0.1';
    const payload = [opts.sign.secret ?? c.applicationSecret, c.consumerKey, method, `https://${host}${path}`, opts.sign.body ?? body, ts].join('+');
    headers['X-Ovh-Application'] = c.applicationKey;
    headers['X-Ovh-Consumer'] = c.consumerKey;
    headers['X-Ovh-Timestamp'] = String(ts);
    headers['X-Ovh-Signature'] = `$1$${createHash('sha1').update(payload).digest('hex')}`;
  }
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: sim.apiPort, method, path, headers, ca: [sim.caPem], agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    if (body !== '') req.write(body);
    req.end();
  });
}
