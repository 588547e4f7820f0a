/**
 * The desired-state document of `dnsplane plan -f` and of the console's PlanAs form (through
 * AdminService.ParseDesiredState): YAML or JSON holding a list of endpoints, or
 * {zones, policy, endpoints}; an endpoint is {dnsName, recordType, targets, ttl, labels} (also
 * dns_name/name, record_type/type, recordTTL). One reader, so that both read a document the same way;
 * errors name the field (`SOURCE: endpoints[2].ttl`) and the rule.
 */
import { create } from '@bufbuild/protobuf';
import { parse as parseYaml } from 'yaml';
import { ResourceExhaustedError } from '../core/errors.js';
import { MAX_ENDPOINTS } from '../core/plan/input.js';
import { InvalidInputError } from '../dns/errors.js';
import { EndpointSchema, PlanRequestSchema, Policy, type Endpoint, type PlanRequest } from '../gen/dnsplane/v1/zone_pb.js';
import { YamlOffThread, type YamlResult } from './yaml-off-thread.js';

export const POLICIES: Record<string, Policy> = { sync: Policy.SYNC, 'upsert-only': Policy.UPSERT_ONLY, 'create-only': Policy.CREATE_ONLY };

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const ALIASES: Record<string, string> = {
  dnsName: 'dnsName',
  dns_name: 'dnsName',
  name: 'dnsName',
  recordType: 'recordType',
  record_type: 'recordType',
  type: 'recordType',
  targets: 'targets',
  target: 'targets',
  ttl: 'ttl',
  recordTTL: 'ttl',
  record_ttl: 'ttl',
  labels: 'labels',
  setIdentifier: 'setIdentifier',
  set_identifier: 'setIdentifier',
};

function endpointFrom(raw: unknown, field: string): Endpoint {
  if (!isObject(raw)) throw new InvalidInputError(field, 'an endpoint must be a mapping like {dnsName, recordType, targets, ttl}');
  const e: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const name = ALIASES[key];
    if (name === undefined) throw new InvalidInputError(`${field}.${key}`, `unknown key (known: ${Object.keys(ALIASES).join(', ')})`);
    if (e[name] !== undefined) throw new InvalidInputError(`${field}.${key}`, `${name} is given twice`);
    e[name] = value;
  }
  const str = (k: string, required: boolean): string => {
    const v = e[k];
    if (v === undefined && !required) return '';
    if (typeof v !== 'string' || v === '') throw new InvalidInputError(`${field}.${k}`, 'must be a non-empty string');
    return v;
  };
  let targets = e['targets'];
  if (typeof targets === 'string' || typeof targets === 'number') targets = [String(targets)];
  if (!Array.isArray(targets) || targets.some((t) => typeof t !== 'string' && typeof t !== 'number')) {
    throw new InvalidInputError(`${field}.targets`, 'must be a list of strings');
  }
  const ttl = e['ttl'] ?? 0;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 0 || ttl > 2147483647) {
    throw new InvalidInputError(`${field}.ttl`, `must be a whole number of seconds, 0 or more (got ${JSON.stringify(ttl)})`);
  }
  const labels = e['labels'] ?? {};
  if (!isObject(labels) || Object.values(labels).some((v) => typeof v !== 'string')) {
    throw new InvalidInputError(`${field}.labels`, 'must be a mapping of strings to strings (quote "true")');
  }
  return create(EndpointSchema, {
    dnsName: str('dnsName', true),
    recordType: str('recordType', true),
    targets: targets.map(String),
    ttl,
    setIdentifier: str('setIdentifier', false),
    labels: labels as Record<string, string>,
  });
}

export interface DesiredFile {
  zones: string[];
  policy?: Policy;
  endpoints: Endpoint[];
}

/** Reads a desired-state document (already parsed from YAML or JSON); fields are named `FILE: …`. */
function desiredFrom(doc: Json | undefined, file: string): DesiredFile {
  const at = (f: string) => `${file}: ${f}`;
  if (Array.isArray(doc)) return { zones: [], endpoints: doc.map((e, i) => endpointFrom(e, at(`[${i}]`))) };
  if (!isObject(doc)) throw new InvalidInputError(file, 'must hold a list of endpoints or a mapping with "endpoints"');
  for (const key of Object.keys(doc)) {
    if (!['zones', 'policy', 'endpoints'].includes(key)) throw new InvalidInputError(at(key), 'unknown key (known: zones, policy, endpoints)');
  }
  const zones = doc['zones'] ?? [];
  if (!Array.isArray(zones) || zones.some((z) => typeof z !== 'string')) throw new InvalidInputError(at('zones'), 'must be a list of zone names');
  const endpoints = doc['endpoints'] ?? [];
  if (!Array.isArray(endpoints)) throw new InvalidInputError(at('endpoints'), 'must be a list of endpoints');
  const out: DesiredFile = { zones: zones as string[], endpoints: endpoints.map((e, i) => endpointFrom(e, at(`endpoints[${i}]`))) };
  const policy = doc['policy'];
  if (policy !== undefined) {
    if (typeof policy !== 'string' || POLICIES[policy] === undefined)
      throw new InvalidInputError(at('policy'), `must be one of ${Object.keys(POLICIES).join(', ')}`);
    out.policy = POLICIES[policy];
  }
  return out;
}

function notYaml(source: string, message: string): InvalidInputError {
  return new InvalidInputError(source, `is neither YAML nor JSON: ${message.split('\n')[0]}`);
}

/** Parses a document (YAML 1.2, which reads JSON too); `source` names it in errors. */
export function parseDesiredDocument(text: string, source: string): DesiredFile {
  let doc: Json | undefined;
  try {
    doc = parseYaml(text) as Json | undefined;
  } catch (e) {
    throw notYaml(source, (e as Error).message);
  }
  return desiredFrom(doc, source);
}

/**
 * Largest document ParseDesiredState reads: 2 MiB, about four times a 5,000-endpoint document (the
 * most one Plan takes). The `yaml` package needs ~90 bytes of heap per byte of YAML while it parses.
 */
export const MAX_DOCUMENT_BYTES = 2 * 1024 * 1024;

/** The YAML worker ParseDesiredState's documents are parsed in (one per process, started on first use). */
const yamlWorker = new YamlOffThread();

/**
 * A document as the PlanRequest PlanAs takes: desired = its zones and endpoints, policy = its policy,
 * POLICY_SYNC when it names none (as `dnsplane plan -f`; a desired state without a policy is refused).
 * Parsed off the event loop (api/yaml-off-thread.ts); a list of more endpoints than a Plan takes
 * (MAX_ENDPOINTS) is refused before it is read into endpoints.
 */
export async function planRequestFromDocument(text: string, source: string): Promise<PlanRequest> {
  if (text.trim() === '') throw new InvalidInputError(source, 'is empty: paste a list of endpoints, or {zones, policy, endpoints}');
  if (Buffer.byteLength(text, 'utf8') > MAX_DOCUMENT_BYTES) throw new InvalidInputError(source, `must be at most ${MAX_DOCUMENT_BYTES} bytes`);
  let parsed: YamlResult;
  try {
    parsed = await yamlWorker.parse(text, MAX_ENDPOINTS);
  } catch (e) {
    // The worker died (its heap is bounded): this document, not the server, is the problem.
    throw new ResourceExhaustedError(`${source}: reading it took more memory than one document may use (${(e as Error).message}); send a smaller one`);
  }
  if ('error' in parsed) throw notYaml(source, parsed.error);
  if ('tooMany' in parsed) throw new InvalidInputError(source, `holds ${parsed.tooMany} endpoints: at most ${MAX_ENDPOINTS}, the most one Plan takes`);
  const d = desiredFrom(parsed.doc as Json | undefined, source);
  return create(PlanRequestSchema, {
    policy: d.policy ?? Policy.SYNC,
    input: { case: 'desired', value: { zones: d.zones, endpoints: d.endpoints } },
  });
}
