/**
 * Connect clients for commands that call a running dnsplane (plan, apply, nsm, the webhook sidecar):
 * `--server URL` (or DNSPLANE_SERVER, default http://127.0.0.1:8080) and a token from `--token-file`
 * or DNSPLANE_TOKEN. The token is sent, never printed. A token file is read again for every call
 * (`tokenSource`): a Kubernetes projected ServiceAccount token is rotated in place by the kubelet
 * (an atomic swap of the file), so a long-running sidecar sends the current one without a restart.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { InvalidInputError } from '../dns/errors.js';

export interface ServerOptions {
  server?: string;
  tokenFile?: string;
}

export const SERVER_OPTIONS_HELP = `  --server URL          dnsplane's API (or DNSPLANE_SERVER) [http://127.0.0.1:8080]
  --token-file FILE     a file holding the bearer token (or DNSPLANE_TOKEN): a dnsplane token, or a
                        workload token (a projected ServiceAccount token, a JWT-SVID) of a subject the
                        tenant trusts; read again for every call, so a rotated token is used at once`;

/** The token to send with a call: a token file's current content, or DNSPLANE_TOKEN. */
export type TokenSource = () => Promise<string>;

export function resolveServer(opts: ServerOptions, env: Record<string, string | undefined>): { baseUrl: string; token: string; tokenSource: TokenSource } {
  const baseUrl = (opts.server ?? env['DNSPLANE_SERVER'] ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  try {
    new URL(baseUrl);
  } catch {
    throw new InvalidInputError('--server', `must be a URL like http://127.0.0.1:8080, got "${baseUrl}"`);
  }
  let token: string | undefined;
  if (opts.tokenFile) {
    try {
      token = readFileSync(opts.tokenFile, 'utf8').trim();
    } catch (e) {
      throw new InvalidInputError('--token-file', `cannot read "${opts.tokenFile}": ${(e as Error).message}`);
    }
  } else {
    token = env['DNSPLANE_TOKEN']?.trim();
  }
  if (!token) throw new InvalidInputError('--token-file', 'a token is required: --token-file FILE or DNSPLANE_TOKEN');
  const file = opts.tokenFile;
  const fixed = token;
  const tokenSource: TokenSource = file ? () => readTokenFile(file) : async () => fixed;
  return { baseUrl, token, tokenSource };
}

/** The token file's content now; Unavailable (a 503 for the sidecar's caller, retried) when it cannot be read or is empty. */
async function readTokenFile(file: string): Promise<string> {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (e) {
    throw new ConnectError(`cannot read the token file "${file}": ${(e as Error).message}`, Code.Unavailable);
  }
  if (!text) throw new ConnectError(`the token file "${file}" is empty`, Code.Unavailable);
  return text;
}

/** Sets `Authorization: Bearer <token>` on every call, the token asked of `token` each time when it is a source. */
export function bearerInterceptor(token: string | TokenSource): Interceptor {
  if (typeof token === 'string') {
    return (next) => (req) => {
      req.header.set('authorization', `Bearer ${token}`);
      return next(req);
    };
  }
  return (next) => async (req) => {
    req.header.set('authorization', `Bearer ${await token()}`);
    return next(req);
  };
}

export function connectClient<S extends DescService>(service: S, baseUrl: string, token: string | TokenSource): Client<S> {
  return createClient(service, createConnectTransport({ baseUrl, httpVersion: '1.1', interceptors: [bearerInterceptor(token)] }));
}
