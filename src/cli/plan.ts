/**
 * `dnsplane plan -f FILE`: the desired endpoints of a YAML or JSON file, planned by a running dnsplane
 * (ZoneService.Plan as the token's tenant, or AdminService.PlanAs with --as for an admin) and shown
 * as a diff (render.ts) or as JSON. Exit code: 0 no changes, 2 changes, 1 errors (main.ts).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { create, toJsonString } from '@bufbuild/protobuf';
import { parse as parseYaml } from 'yaml';
import { InvalidInputError } from '../dns/errors.js';
import { AdminService } from '../gen/dnsplane/v1/admin_pb.js';
import { EndpointSchema, PlanRequestSchema, PlanSchema, Policy, ZoneService, type Endpoint, type Plan } from '../gen/dnsplane/v1/zone_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import type { Command } from './command.js';
import { hasChanges, renderPlan } from './render.js';

const HELP = `Usage: dnsplane plan -f FILE [--as TENANT] [--policy POLICY] [--zone ZONE …] [--output text|json]

Plans the desired state in FILE (YAML or JSON) and prints what applying it would do, terraform style:
  + create   ~ update (old -> new)   - delete   ! conflict (the owner, and why)
with the exact OVH calls under each change. Nothing is sent to OVH; the plan is stored, and
"dnsplane apply PLAN_ID" applies it.

FILE holds a list of endpoints, or {zones: [...], policy: ..., endpoints: [...]}; an endpoint is
  {dnsName, recordType, targets: [...], ttl, labels}   (also dns_name/name, record_type/type, recordTTL)
Label dnsplane/shared: "true" on a new A, AAAA, TXT, MX or SRV set makes it a shared set.

  -f, --file FILE       the desired state
  --as TENANT           plan on behalf of TENANT (an admin token; AdminService.PlanAs, a dry run)
  --policy POLICY       sync (default: your other records in these zones are deleted), upsert-only,
                        create-only; overrides the file's
  --zone ZONE           a zone the desired state covers (repeatable), added to the file's
  --output FORMAT       text (default) or json (the Plan message, Connect JSON)
${SERVER_OPTIONS_HELP}

Exit code: 0 no changes, 2 changes, 1 error. Colours only on a terminal (and never with NO_COLOR).`;

const POLICIES: Record<string, Policy> = { sync: Policy.SYNC, 'upsert-only': Policy.UPSERT_ONLY, 'create-only': Policy.CREATE_ONLY };

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
export function desiredFrom(doc: Json | undefined, file: string): DesiredFile {
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
    if (typeof policy !== 'string' || POLICIES[policy] === undefined) throw new InvalidInputError(at('policy'), `must be one of ${Object.keys(POLICIES).join(', ')}`);
    out.policy = POLICIES[policy];
  }
  return out;
}

export function readDesiredFile(file: string): DesiredFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InvalidInputError('--file', `cannot read "${file}": ${(e as Error).message}`);
  }
  let doc: Json | undefined;
  try {
    doc = parseYaml(text) as Json | undefined; // YAML 1.2 reads JSON too
  } catch (e) {
    throw new InvalidInputError(file, `is neither YAML nor JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  return desiredFrom(doc, file);
}

export const planCommand: Command = {
  summary: 'plan a desired state from a YAML/JSON file and show the diff (exit 2 when there are changes)',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: {
        file: { type: 'string', short: 'f' },
        as: { type: 'string' },
        policy: { type: 'string' },
        zone: { type: 'string', multiple: true },
        output: { type: 'string' },
        server: { type: 'string' },
        'token-file': { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length > 0) throw new InvalidInputError('arguments', `unexpected "${positionals[0]}"; the desired state goes in -f FILE`);
    if (!values.file) throw new InvalidInputError('--file', 'the desired state is required: -f FILE (YAML or JSON)');
    const output = values.output ?? 'text';
    if (output !== 'text' && output !== 'json') throw new InvalidInputError('--output', `must be text or json, got "${output}"`);
    if (values.policy !== undefined && POLICIES[values.policy] === undefined) {
      throw new InvalidInputError('--policy', `must be one of ${Object.keys(POLICIES).join(', ')}, got "${values.policy}"`);
    }
    const desired = readDesiredFile(values.file);
    const request = create(PlanRequestSchema, {
      policy: values.policy !== undefined ? POLICIES[values.policy] : (desired.policy ?? Policy.SYNC),
      input: { case: 'desired', value: { zones: [...desired.zones, ...(values.zone ?? [])], endpoints: desired.endpoints } },
    });
    const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    let plan: Plan | undefined;
    if (values.as !== undefined) {
      plan = (await connectClient(AdminService, baseUrl, token).planAs({ tenant: values.as, request })).plan;
    } else {
      plan = (await connectClient(ZoneService, baseUrl, token).plan(request)).plan;
    }
    if (!plan) throw new Error('the server answered no plan');
    if (output === 'json') io.out(toJsonString(PlanSchema, plan, { prettySpaces: 2 }));
    else for (const line of renderPlan(plan, { color: io.isTty && !io.env['NO_COLOR'] })) io.out(line);
    return hasChanges(plan) ? 2 : 0;
  },
};
