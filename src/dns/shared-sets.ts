/**
 * Shared record sets: several tenants' targets under one name and type, OVH holding the union; the
 * label that marks them and who owns what of one, as the diff (dns/diff.ts) sees it.
 */
import type { Change, Endpoint, RecordSetKey, RecordType } from './types.js';

/**
 * The label that marks a record set shared: sent by a tenant (value "true") to create a shared set,
 * and carried by the before/after of every change of a shared set.
 */
export const SHARED_LABEL = 'dnsplane/shared';
/** The record types a set may be shared in (several owners' targets under one name make sense). */
export const SHAREABLE_TYPES: readonly RecordType[] = ['A', 'AAAA', 'TXT', 'MX', 'SRV'];

/** A shared set as seen by one tenant. Targets are canonical. */
export interface SharedOwnerView {
  kind: 'shared';
  /** The targets this tenant owns in the set (whether or not OVH holds them now). */
  mine: readonly string[];
  /** The TTL of this tenant's records in OVH now (their minimum); absent when it holds none. */
  ttl?: number;
  /** The targets other tenants own -> the owner's name. */
  others: ReadonlyMap<string, string>;
}

/** Who owns a record set, as seen by the tenant the diff is computed for. */
export type OwnerView = { kind: 'self' } | { kind: 'none' } | { kind: 'other'; owner: string } | SharedOwnerView;
export type OwnerOf = (key: RecordSetKey) => OwnerView;

/** Whether an endpoint carries SHARED_LABEL=true. */
export function isSharedEndpoint(e: Pick<Endpoint, 'labels'> | undefined): boolean {
  return e?.labels?.[SHARED_LABEL] === 'true';
}

/** Whether a change is a change of the tenant's slice of a shared set (see the module comment). */
export function isSharedChange(c: Pick<Change, 'before' | 'after'>): boolean {
  return isSharedEndpoint(c.after ?? c.before);
}

export function withSharedLabel(e: Endpoint): Endpoint {
  return { ...e, labels: { ...e.labels, [SHARED_LABEL]: 'true' } };
}

export function withoutSharedLabel(e: Endpoint): Endpoint {
  if (e.labels === undefined || !(SHARED_LABEL in e.labels)) return e;
  const { [SHARED_LABEL]: _dropped, ...labels } = e.labels;
  const out: Endpoint = { ...e };
  if (Object.keys(labels).length > 0) out.labels = labels;
  else delete out.labels;
  return out;
}
