/**
 * The requests node-ovh cannot make, built and signed exactly as node-ovh 3.x builds and signs its
 * own: a GET with headers of ours (the expanded list mode's paging headers), and any call whose path
 * holds "/auth" outside OVH's /auth/ routes — node-ovh sends those unsigned (`path.indexOf('/auth')`
 * in its request()), so that every call of a zone named auth.example.com, authentik.example.org … is
 * refused by OVH as unauthenticated (needsOwnSigning).
 */
import https from 'node:https';
import querystring from 'node:querystring';
import { signRequest } from '../../ovhwire/signature.js';
import type { OvhEndpoint } from '../endpoint.js';
import { inParseTurn } from './parse-turns.js';

export interface OvhCredentials {
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
}

/** node-ovh would send this call unsigned although OVH wants it signed: its path holds "/auth" but is not one of OVH's /auth/ routes. */
export function needsOwnSigning(path: string): boolean {
  return path.includes('/auth') && !path.startsWith('/auth/');
}

/**
 * Same path, query string, body, headers, and signature over `https://` + host without the port +
 * path (+ body) as node-ovh, on the same global https agent, with the extra headers added; settles
 * like node-ovh's requestPromised (a rejection `{error: status | errno, message}`) so that errors,
 * timeouts and the diagnostics channel work the same. Parameters go in the query string, but for
 * PUT and POST, whose body they are (JSON with non-ASCII escaped, as node-ovh writes it).
 * `apiTimeDiff`: node-ovh's offset from OVH's clock, in seconds.
 */
export function signedRequest(
  endpoint: OvhEndpoint,
  credentials: OvhCredentials,
  apiTimeDiff: number,
  method: string,
  path: string,
  params: Record<string, unknown> | undefined,
  extra: Record<string, string> = {},
): Promise<unknown> {
  const given = Object.fromEntries(Object.entries(params ?? {}).filter(([, v]) => v !== undefined && v !== null));
  const inBody = method === 'PUT' || method === 'POST';
  const body =
    inBody && Object.keys(given).length > 0
      ? JSON.stringify(given).replace(/[\u0080-\uFFFF]/g, (m) => `\\u${`0000${m.charCodeAt(0).toString(16)}`.slice(-4)}`)
      : '';
  const query = !inBody && Object.keys(given).length > 0 ? `?${querystring.stringify(given as querystring.ParsedUrlQueryInput)}` : '';
  const fullPath = `${endpoint.basePath}${path}${query}`;
  const timestamp = Math.round(Date.now() / 1000) + apiTimeDiff;
  const signature = signRequest(credentials.applicationSecret, credentials.consumerKey, method, `https://${endpoint.host}${fullPath}`, body, timestamp);
  const headers: Record<string, string> = {
    ...extra,
    ...(body ? { 'Content-Length': String(body.length) } : {}),
    'Content-Type': 'application/json',
    'X-Ovh-Application': credentials.applicationKey,
    'X-Ovh-Timestamp': String(timestamp),
    'X-Ovh-Consumer': credentials.consumerKey,
    'X-Ovh-Signature': signature,
  };
  return new Promise((resolve, reject) => {
    const req = https.request({ host: endpoint.host, port: endpoint.port, method, path: fullPath, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', (e: NodeJS.ErrnoException) => reject({ error: e.errno ?? e }));
      res.on('end', () => inParseTurn(text.length, () => settle()));
      const settle = () => {
        let body: unknown = null;
        if (text.length > 0) {
          try {
            body = JSON.parse(text) as unknown;
          } catch {
            reject({ error: '[OVH] Unable to parse JSON reponse' });
            return;
          }
        }
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) {
          const message =
            body !== null && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string'
              ? (body as { message: string }).message
              : null;
          reject({ error: status, message });
        } else resolve(body);
      };
    });
    req.on('error', (e: NodeJS.ErrnoException) => reject({ error: e.errno ?? e }));
    req.end(body || undefined);
  });
}
