/**
 * What an NSM domain publishes, and the validation of a publish request. Pure.
 *
 * NSM's sdk (pkg/tools/dnsresolve) reaches domain D's service S by looking up `SRV S.D` — S being
 * `registry.nsm-system` or `nsmgr-proxy.nsm-system` — and taking the first answer's port (the SRV
 * target is ignored), then `A/AAAA S.D` and taking the first address: `tcp://ip:port`, IPv6 in
 * brackets (REFERENCE.md section 5). So for each service `<name>.<namespace>.<domain>` gets:
 *   - one SRV record `0 100 <port> <name>.<namespace>.<domain>` (target: the name itself), unless the
 *     service is address-only (vl3-ipam: its port is in its URL);
 *   - one A record and/or one AAAA record — never two of one family, since NSM takes the first.
 *
 * What belongs to a domain (what SYNC may delete, what UnpublishDomain removes): the calling tenant's
 * SRV, A and AAAA record sets exactly two labels below the domain (`<name>.<namespace>.<domain>`).
 * Nothing is stored beside the records and their ownership; see docs/nsm.md.
 */
import { isIP } from 'node:net';
import type { RawEndpoint, SyncScope } from '../core/plan/input.js';
import { normalizeTtl } from '../dns/endpoint.js';
import { InvalidInputError } from '../dns/errors.js';
import { normalizeName } from '../dns/names.js';
import { canonicalTarget } from '../dns/targets.js';
import type { RecordType } from '../dns/types.js';

export const DEFAULT_NAMESPACE = 'nsm-system';
export const REGISTRY = 'registry';
export const NSMGR_PROXY = 'nsmgr-proxy';
/** At most this many services per domain (NSM uses 2 or 3). */
export const MAX_SERVICES = 16;
/** The record types a domain's services are made of. */
export const NSM_RECORD_TYPES: readonly RecordType[] = ['SRV', 'A', 'AAAA'];
/** SRV priority and weight of every published service. */
export const SRV_PRIORITY = 0;
export const SRV_WEIGHT = 100;

/** A service as callers send it. */
export interface NsmServiceInput {
  name: string;
  /** Empty or absent: nsm-system. */
  namespace?: string;
  /** 1-65535; must be 0 or absent when addressOnly. */
  port?: number;
  addresses: readonly string[];
  addressOnly?: boolean;
}

export interface PublishInput {
  domain: string;
  services: readonly NsmServiceInput[];
  /** Seconds; 0 or absent: the zone default. */
  ttl?: number;
}

/** A validated service. */
export interface PublishedService {
  name: string;
  namespace: string;
  /** `<name>.<namespace>.<domain>`. */
  dnsName: string;
  /** 0 when addressOnly. */
  port: number;
  ipv4?: string;
  ipv6?: string;
  addressOnly: boolean;
}

export interface DomainSpec {
  domain: string;
  services: PublishedService[];
  ttl: number;
}

/** Normalizes an NSM domain name: a host name (no `_`, no `*`), lowercase ASCII, no trailing dot. */
export function parseDomain(raw: unknown, field = 'domain'): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new InvalidInputError(field, 'is required (e.g. "cluster1.nsm.example.com")');
  return normalizeName(raw, field);
}

/** One DNS label (letters, digits, hyphens; 1-63 octets), lowercased. */
function parseLabel(raw: unknown, field: string, what: string): string {
  if (typeof raw !== 'string' || raw === '') throw new InvalidInputError(field, `is required (${what})`);
  if (raw.includes('.')) throw new InvalidInputError(field, `must be one DNS label, without dots (got ${JSON.stringify(raw)})`);
  return normalizeName(raw, field);
}

function parsePort(raw: number | undefined, addressOnly: boolean, field: string): number {
  const port = raw ?? 0;
  if (addressOnly) {
    if (port !== 0) throw new InvalidInputError(field, `must be 0 for an address-only service: it publishes no SRV record, so no port (got ${port})`);
    return 0;
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new InvalidInputError(field, `must be a port from 1 to 65535 (got ${String(raw ?? 0)})`);
  }
  return port;
}

/** The canonical form of an IP address, or InvalidInputError. */
export function parseAddress(raw: unknown, field: string): { family: 4 | 6; address: string } {
  const value = typeof raw === 'string' ? raw : '';
  const family = isIP(value);
  if (family === 4) return { family, address: canonicalTarget('A', value, field) };
  if (family === 6 && !value.includes('%')) return { family, address: canonicalTarget('AAAA', value, field) };
  throw new InvalidInputError(
    field,
    `${JSON.stringify(raw)} is not an IP address (an IPv4 address like 192.0.2.1 or an IPv6 address like 2001:db8::1, without brackets, port or zone)`,
  );
}

/** Validates a publish request; throws InvalidInputError naming the first broken field and rule. */
export function validatePublish(input: PublishInput): DomainSpec {
  const domain = parseDomain(input.domain);
  const ttl = normalizeTtl(input.ttl, 'ttl');
  if (!Array.isArray(input.services) || input.services.length === 0) {
    throw new InvalidInputError('services', 'at least one service is required (a domain publishes at least its registry)');
  }
  if (input.services.length > MAX_SERVICES)
    throw new InvalidInputError('services', `at most ${MAX_SERVICES} services per domain (got ${input.services.length})`);
  const seen = new Map<string, number>();
  const services = input.services.map((s, i): PublishedService => {
    const f = `services[${i}]`;
    const name = parseLabel(s.name, `${f}.name`, 'e.g. "registry", "nsmgr-proxy", "vl3-ipam"');
    const namespace = s.namespace ? parseLabel(s.namespace, `${f}.namespace`, 'a Kubernetes namespace') : DEFAULT_NAMESPACE;
    const dnsName = normalizeName(`${name}.${namespace}.${domain}`, `${f}.name`);
    const other = seen.get(dnsName);
    if (other !== undefined) throw new InvalidInputError(`${f}.name`, `services[${other}] already publishes ${dnsName}; list each (name, namespace) once`);
    seen.set(dnsName, i);
    const addressOnly = s.addressOnly ?? false;
    const port = parsePort(s.port, addressOnly, `${f}.port`);
    if (!Array.isArray(s.addresses) || s.addresses.length === 0) {
      throw new InvalidInputError(`${f}.addresses`, 'at least one address is required (one IPv4 and/or one IPv6)');
    }
    const service: PublishedService = { name, namespace, dnsName, port, addressOnly };
    s.addresses.forEach((raw: unknown, j: number) => {
      const { family, address } = parseAddress(raw, `${f}.addresses[${j}]`);
      const key = family === 4 ? 'ipv4' : 'ipv6';
      const first = service[key];
      if (first !== undefined) {
        throw new InvalidInputError(
          `${f}.addresses[${j}]`,
          `a second IPv${family} address (${address} after ${first}): NSM takes the first answer, so publish at most one address per family`,
        );
      }
      service[key] = address;
    });
    return service;
  });
  return { domain, services, ttl };
}

/** The record sets that publish a domain: per service an SRV (unless address-only), an A and/or AAAA. */
export function domainEndpoints(spec: DomainSpec): RawEndpoint[] {
  const out: RawEndpoint[] = [];
  for (const s of spec.services) {
    if (!s.addressOnly) out.push({ dnsName: s.dnsName, recordType: 'SRV', targets: [`${SRV_PRIORITY} ${SRV_WEIGHT} ${s.port} ${s.dnsName}`], ttl: spec.ttl });
    if (s.ipv4 !== undefined) out.push({ dnsName: s.dnsName, recordType: 'A', targets: [s.ipv4], ttl: spec.ttl });
    if (s.ipv6 !== undefined) out.push({ dnsName: s.dnsName, recordType: 'AAAA', targets: [s.ipv6], ttl: spec.ttl });
  }
  return out;
}

/** What belongs to a domain: SRV, A and AAAA sets exactly two labels below it. */
export function domainScope(domain: string): SyncScope {
  return { under: domain, depth: 2, types: [...NSM_RECORD_TYPES] };
}

/** `tcp://ip:port` as NSM's dnsresolve formats it: IPv6 in brackets. */
export function nsmUrl(address: string, port: number): string {
  return address.includes(':') ? `tcp://[${address}]:${port}` : `tcp://${address}:${port}`;
}

/** The URLs NSM builds for a service, IPv4 first; none for an address-only service. */
export function serviceUrls(s: PublishedService): string[] {
  if (s.addressOnly) return [];
  return [s.ipv4, s.ipv6].filter((a): a is string => a !== undefined).map((a) => nsmUrl(a, s.port));
}
