/**
 * Targets of health checks in tests: an HTTP server per loopback address (127.0.0.2, 127.0.0.3 …), all on
 * one port (the first bind picks it, port 0), answering /healthz 200 and anything else 404, each request's
 * Host and path recorded. Stopped and started again on the same address and port, as a cluster's ingress
 * that dies and comes back.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';

export class HealthTargets {
  /** The port every target listens on (0 until the first one started). */
  port = 0;
  private readonly servers = new Map<string, http.Server>();
  /** Per address: "<Host> <path>" of each request it answered. */
  readonly hits = new Map<string, string[]>();

  async start(address: string): Promise<void> {
    const server = http.createServer((req, res) => {
      this.hits.set(address, [...(this.hits.get(address) ?? []), `${req.headers.host} ${req.url}`]);
      res.writeHead(req.url === '/healthz' ? 200 : 404).end('ok');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, address, () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.servers.set(address, server);
  }

  async stop(address: string): Promise<void> {
    const server = this.servers.get(address);
    if (!server) throw new Error(`no health target on ${address}`);
    this.servers.delete(address);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async stopAll(): Promise<void> {
    for (const address of [...this.servers.keys()]) await this.stop(address);
  }

  /** The check of a set whose targets these are (the label's value). */
  check(path = '/healthz'): string {
    return `http://:${this.port}${path}`;
  }
}

/**
 * Runs `rounds` rounds of a checker: each one before the last withdraws (or restores, `what`) nothing and
 * sends no OVH call (`calls()` stays empty); the last round's report is returned for the test to judge.
 */
export async function lastOfRounds<R extends { withdrawn: unknown[]; restored: unknown[] }>(
  checker: { runRound(): Promise<R> },
  rounds: number,
  what: 'withdrawn' | 'restored',
  calls: () => string[],
): Promise<R> {
  for (let i = 1; i < rounds; i++) {
    expect((await checker.runRound())[what]).toEqual([]);
    expect(calls()).toEqual([]);
  }
  return checker.runRound();
}
