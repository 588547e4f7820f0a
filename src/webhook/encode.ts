/**
 * dnsplane's record sets as GET /records answers them, each endpoint's JSON and each whole list
 * encoded once and kept for as long as core hands out the same objects.
 */
import { Slicer } from '../core/slices.js';
import { healthCheckOf, HEALTH_CHECK_LABEL } from '../dns/health-check.js';
import { drain } from '../dns/steps.js';
import { dnsViewSteps } from '../dns/txt-family.js';
import { isTxtFamily, type Endpoint } from '../dns/types.js';
import { healthCheckProperties } from './normalize.js';
import { encodeEndpointJson, joinEndpointList, type WireEndpoint } from './protocol.js';

type ServedEndpoint = { dnsName: string; recordType: string; targets: string[]; ttl: number; labels?: Record<string, string> };

/** dnsplane's record sets as external-dns reads them. */
function toWire(e: ServedEndpoint): WireEndpoint {
  // dnsplane's `owner` label (the owning tenant) is left out: in external-dns, `owner` is the TXT
  // registry's owner id, which the registry fills in from its TXT records; passing dnsplane's tenant
  // name under that key would make a record look owned (or not) by the wrong party. The webhook only
  // returns the tenant's own record sets anyway.
  // The check goes back as the provider-specific property it came in as (normalize.ts), not as a label.
  const labels = Object.fromEntries(Object.entries(e.labels ?? {}).filter(([k]) => k !== 'owner' && k !== HEALTH_CHECK_LABEL));
  return {
    dnsName: e.dnsName,
    targets: e.targets,
    recordType: e.recordType,
    setIdentifier: '',
    recordTTL: e.ttl,
    labels,
    providerSpecific: healthCheckProperties(healthCheckOf(e)),
  };
}

/**
 * Each endpoint's JSON, encoded once: in central mode core hands out the same endpoint objects for as
 * long as a zone's generation and the tenant's view stay the same (core/reads/read-cache.ts).
 */
const encoded = new WeakMap<object, string>();

function wireJson(e: ServedEndpoint): string {
  let json = encoded.get(e);
  if (json === undefined) encoded.set(e, (json = encodeEndpointJson(toWire(e))));
  return json;
}

/**
 * Whole GET /records answers by the endpoints array they encode: the read cache hands out the same
 * array for a view as long as its generation stands, so a poll writes bytes already encoded.
 */
const listBodies = new WeakMap<readonly object[], Promise<Buffer>>();

/** Each view's sets with a name's TXT family as one TXT set, made once per view (the array core hands out). */
const views = new WeakMap<readonly Endpoint[], readonly Endpoint[]>();

/**
 * The tenant's sets as external-dns sees them: a name's TXT, SPF, DKIM and DMARC sets one TXT set, as
 * resolvers see them (dns/txt-family.ts); the array itself when it has no SPF, DKIM or DMARC set.
 */
export function webhookView(endpoints: readonly Endpoint[]): readonly Endpoint[] {
  let view = views.get(endpoints);
  if (view === undefined) {
    view = endpoints.some((e) => e.recordType !== 'TXT' && isTxtFamily(e.recordType)) ? drain(dnsViewSteps(endpoints)) : endpoints;
    views.set(endpoints, view);
  }
  return view;
}

/** The list's bytes, encoded once per view, in slices (a zone may hold 20,000 record sets). */
export function endpointListBody(endpoints: readonly ServedEndpoint[]): Promise<Buffer> {
  let body = listBodies.get(endpoints);
  if (body === undefined) {
    // Kept as a promise: callers that miss together share one encoding.
    body = new Slicer().map(endpoints, wireJson, 256).then((elements) => Buffer.from(joinEndpointList(elements)));
    listBodies.set(endpoints, body);
    body.catch(() => listBodies.delete(endpoints));
  }
  return body;
}
