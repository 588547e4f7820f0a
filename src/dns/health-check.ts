/**
 * A record set's health check (docs/failover.md): the label HEALTH_CHECK_LABEL on an endpoint, a URL
 * whose host is EMPTY because it means "each target of the set" — `http://:8080/healthz`,
 * `https://:443/ready`, `tcp://:443`. No host can be named, so a check can only ever reach the
 * addresses of the set's own targets. From external-dns it arrives as the webhook provider-specific
 * property HEALTH_CHECK_PROPERTY (the annotation `external-dns.alpha.kubernetes.io/webhook-dnsplane-health-check`).
 * Pure.
 */
import { InvalidInputError } from './errors.js';
import type { Endpoint, RecordType } from './types.js';

/** The label that carries a record set's check (Connect, YAML desired states). */
export const HEALTH_CHECK_LABEL = 'dnsplane/health-check';
/**
 * The provider-specific property external-dns sends for the annotation
 * `external-dns.alpha.kubernetes.io/webhook-dnsplane-health-check`: external-dns turns every annotation
 * `external-dns.alpha.kubernetes.io/webhook-<x>` into the property `webhook/<x>` (source/annotations).
 */
export const HEALTH_CHECK_PROPERTY = 'webhook/dnsplane-health-check';
/** The record types a check applies to: their targets are addresses. */
export const CHECKABLE_TYPES: readonly RecordType[] = ['A', 'AAAA'];
/** The longest check URL accepted (a path, not a document). */
export const MAX_HEALTH_CHECK_LENGTH = 256;

export interface HealthCheck {
  scheme: 'http' | 'https' | 'tcp';
  port: number;
  /** The path and query for http(s) ('/' when none); '' for tcp. */
  path: string;
}

const HTTP_FORM = /^(https?):\/\/:(\d{1,5})((?:\/[\x21-\x7e]*)?)$/;
const TCP_FORM = /^tcp:\/\/:(\d{1,5})$/;
const RULE = 'must be a URL with an empty host (each target of the set): http://:PORT/PATH, https://:PORT/PATH or tcp://:PORT';

/** Parses a check's URL, or throws InvalidInputError naming `field` and the rule. */
export function parseHealthCheck(value: string, field: string): HealthCheck {
  if (value.length > MAX_HEALTH_CHECK_LENGTH) throw new InvalidInputError(field, `is ${value.length} characters; at most ${MAX_HEALTH_CHECK_LENGTH}`);
  const http = HTTP_FORM.exec(value);
  const tcp = http ? undefined : TCP_FORM.exec(value);
  if (!http && !tcp) {
    const named = /^[a-z]+:\/\/[^:/]+/i.test(value) ? ' (a host was named: a check goes only to the targets of its own set)' : '';
    throw new InvalidInputError(field, `${RULE}; got ${JSON.stringify(value)}${named}`);
  }
  const port = Number((http ? http[2] : tcp![1]) as string);
  if (port < 1 || port > 65535) throw new InvalidInputError(field, `port ${port} is out of range (1-65535)`);
  if (http) return { scheme: http[1] as 'http' | 'https', port, path: http[3] || '/' };
  return { scheme: 'tcp', port, path: '' };
}

/** The check an endpoint carries, or undefined. */
export function healthCheckOf(e: Pick<Endpoint, 'labels'> | undefined): string | undefined {
  const v = e?.labels?.[HEALTH_CHECK_LABEL];
  return v === undefined || v === '' ? undefined : v;
}

/** Checks the label of an endpoint a tenant sends: a valid URL (parseHealthCheck), on a type that can be checked. */
export function checkHealthCheckLabel(e: Pick<Endpoint, 'recordType' | 'labels'>, field: string): void {
  const value = e.labels?.[HEALTH_CHECK_LABEL];
  if (value === undefined || value === '') return;
  checkHealthCheck(value, e.recordType, `${field}.labels["${HEALTH_CHECK_LABEL}"]`);
}

/** A check's URL for a set of `recordType`, wherever it came from (`where` names the field). */
export function checkHealthCheck(value: string, recordType: string, where: string): HealthCheck {
  const check = parseHealthCheck(value, where);
  if (!(CHECKABLE_TYPES as readonly string[]).includes(recordType)) {
    throw new InvalidInputError(
      where,
      `a ${recordType} record set cannot be checked (checks are for ${CHECKABLE_TYPES.join(' and ')} sets: their targets are addresses)`,
    );
  }
  return check;
}

/** Where a check of `check` goes for one target (an address of the set): the URL used, for people and logs. */
export function checkUrlFor(check: HealthCheck, address: string): string {
  const host = address.includes(':') ? `[${address}]` : address;
  return check.scheme === 'tcp' ? `tcp://${host}:${check.port}` : `${check.scheme}://${host}:${check.port}${check.path}`;
}
