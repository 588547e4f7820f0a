/**
 * Who a request is from, as every door names it — the login limiter, the connection caps, the logs,
 * "last seen", the journal's "from": the client's address, not the proxy's. The HTTP front marks it
 * (api/front/): on the connection, what a trusted proxy's PROXY protocol header said; on a request
 * through a trusted HTTP proxy, what its forwarded header says (forwarded.ts). Unmarked, it is the
 * peer's address: a direct deployment (no DNSPLANE_TRUSTED_PROXIES) marks nothing.
 *
 * The marks are symbol properties on the socket (once per connection) and the request (only behind a
 * trusted HTTP proxy), read through the h2 compatibility layer's socket proxy as through a socket.
 */
import { hostOf } from './address.js';

const kConnectionClient = Symbol('dnsplane.connectionClient');
const kRequestClient = Symbol('dnsplane.requestClient');

type SocketLike = { remoteAddress?: string | undefined; [kConnectionClient]?: string };
type RequestLike = { socket?: SocketLike | null; [kRequestClient]?: string };

/** The connection is `client`'s (a trusted proxy's PROXY header said so). */
export function markConnectionClient(socket: object, client: string): void {
  (socket as SocketLike)[kConnectionClient] = client;
}

/** The request is `client`'s (a trusted proxy's forwarded header said so). */
export function markRequestClient(req: object, client: string): void {
  (req as RequestLike)[kRequestClient] = client;
}

/** A connection's client: what its PROXY header said, else its peer. */
export function connectionClient(socket: SocketLike | null | undefined): string {
  return socket?.[kConnectionClient] ?? hostOf(socket?.remoteAddress ?? undefined);
}

/** A request's client address (IPv4-mapped IPv6 as IPv4); 'unknown' when the socket is gone. */
export function clientAddress(req: object): string {
  const r = req as RequestLike;
  return r[kRequestClient] ?? connectionClient(r.socket);
}
