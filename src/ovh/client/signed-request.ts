/**
 * The one request node-ovh cannot make — a GET with headers of ours (the expanded list mode's paging
 * headers) — built and signed exactly as node-ovh 3.x builds and signs its own.
 */
import https from 'node:https';
import querystring from 'node:querystring';
import { signRequest } from '../../ovhwire/signature.js';
import type { OvhEndpoint } from '../endpoint.js';

export interface OvhCredentials {
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
}

/**
 * Same path, query string, headers, and signature over `https://` + host without the port + path as
 * node-ovh, on the same global https agent, with the extra headers added; settles like node-ovh's
 * requestPromised (a rejection `{error: status | errno, message}`) so that errors, timeouts and the
 * diagnostics channel work the same. GET only (no body). `apiTimeDiff`: node-ovh's offset from
 * OVH's clock, in seconds.
 */
export function signedGet(
  endpoint: OvhEndpoint,
  credentials: OvhCredentials,
  apiTimeDiff: number,
  path: string,
  params: Record<string, unknown> | undefined,
  extra: Record<string, string>,
): Promise<unknown> {
  const method = 'GET';
  const query = Object.fromEntries(Object.entries(params ?? {}).filter(([, v]) => v !== undefined && v !== null));
  const fullPath = `${endpoint.basePath}${path}${Object.keys(query).length > 0 ? `?${querystring.stringify(query as querystring.ParsedUrlQueryInput)}` : ''}`;
  const timestamp = Math.round(Date.now() / 1000) + apiTimeDiff;
  const signature = signRequest(credentials.applicationSecret, credentials.consumerKey, method, `https://${endpoint.host}${fullPath}`, '', timestamp);
  const headers = {
    ...extra,
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
      res.on('end', () => {
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
          const message = body !== null && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string' ? (body as { message: string }).message : null;
          reject({ error: status, message });
        } else resolve(body);
      });
    });
    req.on('error', (e: NodeJS.ErrnoException) => reject({ error: e.errno ?? e }));
    req.end();
  });
}
