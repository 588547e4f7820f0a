/**
 * Connect clients for commands that call a running dnsplane (plan, apply, nsm, the webhook sidecar):
 * `--server URL` (or DNSPLANE_SERVER, default http://127.0.0.1:8080) and a token from `--token-file`
 * or DNSPLANE_TOKEN. The token is sent, never printed.
 */
import { readFileSync } from 'node:fs';
import type { DescService } from '@bufbuild/protobuf';
import { createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { InvalidInputError } from '../dns/errors.js';

export interface ServerOptions {
  server?: string;
  tokenFile?: string;
}

export const SERVER_OPTIONS_HELP = `  --server URL          dnsplane's API (or DNSPLANE_SERVER) [http://127.0.0.1:8080]
  --token-file FILE     a file holding the bearer token (or DNSPLANE_TOKEN)`;

export function resolveServer(opts: ServerOptions, env: Record<string, string | undefined>): { baseUrl: string; token: string } {
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
  return { baseUrl, token };
}

export function connectClient<S extends DescService>(service: S, baseUrl: string, token: string): Client<S> {
  const auth: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${token}`);
    return next(req);
  };
  return createClient(service, createConnectTransport({ baseUrl, httpVersion: '1.1', interceptors: [auth] }));
}
