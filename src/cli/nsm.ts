/**
 * `dnsplane nsm publish|unpublish`: an NSM domain's exposed services through a running dnsplane
 * (NsmService), printing what changed and the OVH calls made.
 */
import { isIP } from 'node:net';
import { parseArgs } from 'node:util';
import { ApplyStatus, ChangeAction, type OvhOperation, type PlannedChange } from '../gen/dnsplane/v1/zone_pb.js';
import { NsmService, type PublishedNsmService } from '../gen/dnsplane/v1/nsm_pb.js';
import { InvalidInputError } from '../dns/errors.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import type { CliIo, Command } from './command.js';
import { EXIT_NOT_VISIBLE, isVisible, visibilityLines, waitFromArgs, WAIT_OPTIONS, WAIT_OPTIONS_HELP } from './visibility.js';

const HELP = `Usage:
  dnsplane nsm publish --domain DOMAIN --registry IP:PORT [--nsmgr-proxy IP:PORT]
                       [--service NAME=IP[:PORT] …] [--floating] [--namespace NS] [--ttl SECONDS]
                       [--wait [--wait-timeout D]]
  dnsplane nsm unpublish --domain DOMAIN

publish makes DOMAIN's published services exactly the ones given. For each service it publishes what
NSM resolves: an SRV record "0 100 PORT NAME" at NAME = <service>.<namespace>.DOMAIN, and one A
and/or one AAAA record at the same name (NSM takes the first answer: one address per family).
Republishing with another address or port updates the records in place; republishing the same
thing sends nothing to OVH; a service no longer listed is removed.

  --domain DOMAIN       the NSM domain, e.g. cluster1.nsm.example.com
  --registry ADDR       the registry's public IP:PORT (IPv6 as [addr]:port); repeat once for the
                        other address family
  --nsmgr-proxy ADDR    the nsmgr-proxy's public IP:PORT; required unless --floating
  --service N=ADDR      another service, e.g. vl3-ipam=192.0.2.7 (no port: A/AAAA only, no SRV)
                        or name=IP:PORT; repeat for the other family or more services
  --floating            a floating (registry-only) domain: no nsmgr-proxy
  --namespace NS        the services' namespace [nsm-system]
  --ttl SECONDS         TTL of every record; 0 is the zone default [0]
${WAIT_OPTIONS_HELP.replace('the change is visible', 'the records are visible')}
                        (then a peer cluster resolving the domain finds it); exit ${EXIT_NOT_VISIBLE} when they
                        are published but not shown visible
${SERVER_OPTIONS_HELP}

unpublish removes every service publish published for DOMAIN, and nothing else.

Then NSM in any cluster resolves registry.nsm-system.DOMAIN and nsmgr-proxy.nsm-system.DOMAIN from the
public zone: no cluster needs to expose a DNS server. See docs/nsm.md.`;

interface HostPort {
  address: string;
  port?: number;
}

/** `IP:PORT`, `[IPv6]:PORT`, or (allowPortless) `IP` / `[IPv6]`. */
export function parseHostPort(raw: string, flag: string, allowPortless: boolean): HostPort {
  const form = allowPortless ? 'IP or IP:PORT (IPv6 as [addr] or [addr]:port)' : 'IP:PORT (IPv6 as [addr]:port)';
  let address: string;
  let port: string | undefined;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(raw);
  if (bracketed) {
    address = bracketed[1]!;
    port = bracketed[2];
    if (isIP(address) !== 6) throw new InvalidInputError(flag, `"${address}" in brackets is not an IPv6 address; expected ${form}`);
  } else {
    const colons = raw.split(':').length - 1;
    if (colons > 1) throw new InvalidInputError(flag, `"${raw}": put an IPv6 address in brackets, e.g. [2001:db8::1]:5002`);
    [address, port] = colons === 1 ? (raw.split(':') as [string, string]) : [raw, undefined];
    if (isIP(address) !== 4) throw new InvalidInputError(flag, `"${raw}" is not ${form}`);
  }
  if (port === undefined) {
    if (!allowPortless) throw new InvalidInputError(flag, `"${raw}" has no port; expected ${form}`);
    return { address };
  }
  const n = Number(port);
  if (!/^[0-9]{1,5}$/.test(port) || n < 1 || n > 65535) throw new InvalidInputError(flag, `"${raw}": the port must be from 1 to 65535`);
  return { address, port: n };
}

interface ServiceArg {
  name: string;
  flag: string;
  entries: HostPort[];
}

function servicesFrom(values: { registry?: string[]; 'nsmgr-proxy'?: string[]; service?: string[] }): ServiceArg[] {
  const byName = new Map<string, ServiceArg>();
  const add = (name: string, flag: string, entry: HostPort) => {
    const s = byName.get(name) ?? { name, flag, entries: [] };
    s.entries.push(entry);
    byName.set(name, s);
  };
  for (const raw of values.registry ?? []) add('registry', '--registry', parseHostPort(raw, '--registry', false));
  for (const raw of values['nsmgr-proxy'] ?? []) add('nsmgr-proxy', '--nsmgr-proxy', parseHostPort(raw, '--nsmgr-proxy', false));
  for (const raw of values.service ?? []) {
    const eq = raw.indexOf('=');
    if (eq <= 0) throw new InvalidInputError('--service', `"${raw}" must be NAME=IP or NAME=IP:PORT, e.g. vl3-ipam=192.0.2.7`);
    const name = raw.slice(0, eq);
    add(name, `--service ${name}`, parseHostPort(raw.slice(eq + 1), `--service ${name}`, true));
  }
  for (const s of byName.values()) {
    const ports = new Set(s.entries.map((e) => e.port));
    if (ports.size > 1) {
      throw new InvalidInputError(s.flag, `every address of one service has the same port (got ${[...ports].map((p) => p ?? 'none').join(' and ')})`);
    }
  }
  return [...byName.values()];
}

/** "published" when applied; otherwise the status says what happened (e.g. a server in dry-run mode sent nothing). */
function verb(status: ApplyStatus, done: string): string {
  return status === ApplyStatus.APPLIED ? done : `${(ApplyStatus[status] ?? String(status)).toLowerCase()}, not ${done}:`;
}

function targets(targets: readonly string[]): string {
  return targets.join(', ');
}

function changeLine(c: PlannedChange): string {
  const e = (c.after ?? c.before)!;
  switch (c.action) {
    case ChangeAction.CREATE:
      return `  + ${e.dnsName} ${e.recordType} ${targets(c.after!.targets)}`;
    case ChangeAction.DELETE:
      return `  - ${e.dnsName} ${e.recordType} ${targets(c.before!.targets)}`;
    default: {
      const ttl = c.before!.ttl !== c.after!.ttl ? ` (ttl ${c.before!.ttl} -> ${c.after!.ttl})` : '';
      return `  ~ ${e.dnsName} ${e.recordType} ${targets(c.before!.targets)} -> ${targets(c.after!.targets)}${ttl}`;
    }
  }
}

function printChanges(io: CliIo, changes: readonly PlannedChange[], calls: readonly OvhOperation[]): void {
  for (const c of changes) {
    io.out(changeLine(c));
    for (const w of c.warnings) io.out(`      warning: ${w}`);
  }
  if (calls.length > 0) {
    io.out('OVH calls:');
    for (const call of calls) io.out(`  ${call.method} ${call.path}${call.body ? ` ${call.body}` : ''}`);
  }
}

function printResolution(io: CliIo, services: readonly PublishedNsmService[]): void {
  io.out('NSM resolves:');
  for (const s of services) {
    io.out(`  ${s.dnsName} -> ${s.addressOnly ? `${s.addresses.join(', ')} (A/AAAA only, no SRV)` : s.urls.join(', ')}`);
  }
}

async function publish(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      domain: { type: 'string' },
      registry: { type: 'string', multiple: true },
      'nsmgr-proxy': { type: 'string', multiple: true },
      service: { type: 'string', multiple: true },
      floating: { type: 'boolean' },
      namespace: { type: 'string' },
      ttl: { type: 'string' },
      ...WAIT_OPTIONS,
      server: { type: 'string' },
      'token-file': { type: 'string' },
    },
    strict: true,
  });
  if (!values.domain) throw new InvalidInputError('--domain', 'is required, e.g. --domain cluster1.nsm.example.com');
  if (!values.registry?.length) throw new InvalidInputError('--registry', "is required: the registry's public IP:PORT, e.g. --registry 192.0.2.10:5002");
  const services = servicesFrom(values);
  const hasProxy = services.some((s) => s.name === 'nsmgr-proxy');
  if (values.floating && hasProxy)
    throw new InvalidInputError('--floating', 'a floating domain publishes only its registry (and services such as vl3-ipam), no nsmgr-proxy');
  if (!values.floating && !hasProxy)
    throw new InvalidInputError('--nsmgr-proxy', 'is required for an interdomain cluster; use --floating for a registry-only floating domain');
  let ttl = 0;
  if (values.ttl !== undefined) {
    ttl = Number(values.ttl);
    if (!/^[0-9]+$/.test(values.ttl) || !Number.isSafeInteger(ttl))
      throw new InvalidInputError('--ttl', `must be a whole number of seconds (got "${values.ttl}")`);
  }
  const wait = waitFromArgs(values);

  const { baseUrl, tokenSource } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
  const res = await connectClient(NsmService, baseUrl, tokenSource).publishDomain({
    domain: values.domain,
    ttl,
    services: services.map((s) => ({
      name: s.name,
      namespace: values.namespace ?? '',
      port: s.entries[0]!.port ?? 0,
      addresses: s.entries.map((e) => e.address),
      addressOnly: s.entries[0]!.port === undefined,
    })),
    ...wait,
  });
  if (res.status === ApplyStatus.NO_CHANGES) {
    io.out(`NSM domain ${res.domain} (zone ${res.zone}) is already published as asked: no change, no OVH call`);
  } else {
    io.out(
      `${verb(res.status, 'published')} NSM domain ${res.domain} (zone ${res.zone}): ${res.changes.length} change(s), ${res.calls.length} OVH call(s), generation ${res.generation}`,
    );
    printChanges(io, res.changes, res.calls);
  }
  if (res.visibility) for (const l of visibilityLines(res.visibility)) io.out(l);
  printResolution(io, res.services);
  return res.journalId && values.wait && !isVisible(res.visibility) ? EXIT_NOT_VISIBLE : 0;
}

async function unpublish(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { domain: { type: 'string' }, server: { type: 'string' }, 'token-file': { type: 'string' } },
    strict: true,
  });
  if (!values.domain) throw new InvalidInputError('--domain', 'is required, e.g. --domain cluster1.nsm.example.com');
  const { baseUrl, tokenSource } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
  const res = await connectClient(NsmService, baseUrl, tokenSource).unpublishDomain({ domain: values.domain });
  if (res.status === ApplyStatus.NO_CHANGES) {
    io.out(`nothing is published for NSM domain ${res.domain} (zone ${res.zone}): no change, no OVH call`);
    return 0;
  }
  io.out(
    `${verb(res.status, 'unpublished')} NSM domain ${res.domain} (zone ${res.zone}): ${res.changes.length} change(s), ${res.calls.length} OVH call(s), generation ${res.generation}`,
  );
  printChanges(io, res.changes, res.calls);
  return 0;
}

export const nsmCommand: Command = {
  summary: 'publish or unpublish an NSM domain (registry, nsmgr-proxy) for interdomain',
  help: HELP,
  async run(args, io) {
    const [sub, ...rest] = args;
    if (sub === 'publish') return publish(rest, io);
    if (sub === 'unpublish') return unpublish(rest, io);
    throw new InvalidInputError('nsm', `unknown subcommand "${sub ?? ''}"; use publish or unpublish (see dnsplane nsm --help)`);
  },
};
