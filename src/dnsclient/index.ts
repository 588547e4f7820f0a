/**
 * dnsclient: dnsplane asking DNS servers (the prober's questions to a zone's authoritative servers,
 * core/probe/). I/O over the pure codec of dns/wire/; imports nothing else of ours.
 */
import { lookup } from 'node:dns/promises';
import net from 'node:net';
export { DnsQueryError, query, tcpFrame, type DnsAnswer, type DnsServerAddress } from './query.js';

/** An address of a host name (the first the system resolver gives); an IP address as it is. */
export async function resolveHost(host: string): Promise<string> {
  if (net.isIP(host) !== 0) return host;
  return (await lookup(host.replace(/\.$/, ''))).address;
}
