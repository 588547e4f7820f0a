/**
 * A connection's first bytes, before the h1/h2c sniff: a PROXY protocol header (net/proxy-protocol.ts)
 * is taken off them when the peer is a trusted proxy (DNSPLANE_TRUSTED_PROXIES), and the client it
 * names becomes the connection's (net/client-address.ts); from any other peer a PROXY header is
 * refused — a client cannot name itself — and a malformed one closes its connection. Either refusal
 * closes that connection only, is counted (dnsplane_http_connections_refused_total, reason
 * proxy_untrusted or proxy_malformed) and logged: the first few of each 10 s one line each, the rest
 * in one summary line.
 *
 * A trusted peer may also send no header (its health checks, or an HTTP proxy writing forwarded
 * headers instead): the connection is then its own, as any other.
 */
import type net from 'node:net';
import type { Logger } from 'pino';
import { hostOf } from '../../net/address.js';
import { readProxyHeader, V2_MAX_BYTES } from '../../net/proxy-protocol.js';

export type ProxyRefusal = 'proxy_untrusted' | 'proxy_malformed';

/** What the preface found: the bytes after any PROXY header (at least one), and the client the header named. */
export interface Preface {
  first: Buffer;
  /** The client a trusted proxy's header named; undefined: no header, or one naming no client (LOCAL, UNKNOWN). */
  client?: string;
}

/** Lines logged one by one per window; the rest are counted in its summary. */
const LINES_PER_WINDOW = 5;
const WINDOW_MS = 10_000;

/** Refused PROXY headers, logged without letting a flood write a line per connection. */
export class ProxyNotices {
  private lines = 0;
  private counted = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    private readonly port: string,
  ) {}

  refused(reason: ProxyRefusal, peer: string, detail: string): void {
    const message =
      reason === 'proxy_untrusted'
        ? `http: a PROXY protocol header from ${peer}, which is not in DNSPLANE_TRUSTED_PROXIES: connection closed`
        : `http: a malformed PROXY protocol header from ${peer} (${detail}): connection closed`;
    if (this.lines < LINES_PER_WINDOW) {
      this.lines++;
      this.log.warn({ port: this.port, peer, reason, detail }, message);
    } else this.counted++;
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), WINDOW_MS);
      this.timer.unref();
    }
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.counted > 0)
      this.log.warn(
        { port: this.port, refused: this.counted, windowSeconds: WINDOW_MS / 1000 },
        `http: ${this.counted} more connections with refused PROXY headers (summary)`,
      );
    this.lines = 0;
    this.counted = 0;
  }
}

/**
 * Reads the socket's first bytes until they are known to start with a PROXY header or not, then
 * pauses it and calls `done` with the bytes that follow the header (never empty), or `refuse` (the
 * caller closes the connection). `trusted`: whether the peer may send a header.
 */
export function readPreface(
  socket: net.Socket,
  trusted: boolean,
  done: (preface: Preface) => void,
  refuse: (reason: ProxyRefusal, detail: string) => void,
): void {
  let buffered: Buffer | undefined;
  let header: { client?: string } | undefined;
  const onData = (chunk: Buffer): void => {
    if (header) {
      finish(chunk);
      return;
    }
    buffered = buffered ? Buffer.concat([buffered, chunk]) : chunk;
    const read = readProxyHeader(buffered);
    switch (read.state) {
      case 'more':
        // readProxyHeader bounds what it waits for; this is a second bound, on what is held here.
        if (buffered.length > V2_MAX_BYTES) stop(() => refuse('proxy_malformed', 'no complete header within its bound'));
        break;
      case 'none':
        finish(buffered);
        break;
      case 'invalid':
        stop(() => refuse(trusted ? 'proxy_malformed' : 'proxy_untrusted', read.reason));
        break;
      case 'header': {
        if (!trusted) {
          stop(() => refuse('proxy_untrusted', `v${read.version} header`));
          break;
        }
        header = read.client ? { client: hostOf(read.client.address) } : {};
        const rest = buffered.subarray(read.length);
        buffered = undefined;
        // The header came alone: the connection's own first bytes are still to come.
        if (rest.length > 0) finish(rest);
      }
    }
  };
  const stop = (then: () => void): void => {
    socket.off('data', onData);
    socket.pause();
    then();
  };
  const finish = (first: Buffer): void => stop(() => done({ first, ...(header?.client !== undefined ? { client: header.client } : {}) }));
  socket.on('data', onData);
}
