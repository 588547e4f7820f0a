/**
 * `dnsplane tenant handover|drain|undrain`: a cluster's life (issue 46; docs/ownership.md "Handover"), over the API
 * with an admin token (AdminService.HandoverTenant), as `journal revert` is: the server judges and
 * moves the ownership under the zones' locks, and every replica hears it.
 */
import { parseArgs } from 'node:util';
import { toJsonString } from '@bufbuild/protobuf';
import { InvalidInputError } from '../dns/errors.js';
import { AdminService, DrainTenantResponseSchema, HandoverTenantResponseSchema, type HandedSet } from '../gen/dnsplane/v1/admin_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { outputOf, type CliIo } from './command.js';

export const LIFE_HELP = `Usage:
  dnsplane tenant handover OLD NEW [--zone ZONE] [--suffix SUFFIX] [--dry-run] [--output text|json]
  dnsplane tenant drain NAME [--zone ZONE] [--output text|json]
  dnsplane tenant undrain NAME [--zone ZONE] [--output text|json]

handover: everything tenant OLD owns — its exclusive record sets and its targets of shared sets;
  with --zone only in that zone, with --suffix only that name and the names below it — becomes
  tenant NEW's, in one transaction with one journal entry. Nothing on OVH changes (no OVH call): NEW's
  external-dns, given the same sources, then plans nothing, and OLD's writes to those sets are
  refused as any other tenant's. Refused as a whole, naming the sets, when NEW's zones or suffixes do
  not cover every one of them. --dry-run lists what would move and writes nothing.
  Undo it with "dnsplane journal revert ID" (the entry it prints). See docs/external-dns.md
  ("Replacing a cluster") for a blue/green migration step by step.

drain: the tenant's published targets of shared record sets are withdrawn from OVH now (maintenance):
  one DELETE each and one refresh per zone, journalled, never a set's last target (kept, and said
  so). Its exclusive sets stay. It keeps writing its desired state meanwhile: Records shows it the
  drained targets as its own, marked withdrawn, so its external-dns plans nothing, and they stay off
  OVH until undrain (one POST each, one refresh per zone). See docs/failover.md ("Drain").

  --output FORMAT       text (default) or json (the answer message, Connect JSON)
${SERVER_OPTIONS_HELP}

Needs an admin token (the command talks to the server, unlike tenant create).`;

/** One handed-over row as a line. */
export function handedLine(s: HandedSet): string {
  return `  ${s.dnsName} ${s.recordType}${s.target ? ` ${s.target}` : ''} (${s.zone}${s.shared ? ', shared' : ''})`;
}

export async function runHandover(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      zone: { type: 'string' },
      suffix: { type: 'string' },
      'dry-run': { type: 'boolean' },
      output: { type: 'string' },
      json: { type: 'boolean' },
      server: { type: 'string' },
      'token-file': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 2) throw new InvalidInputError('arguments', 'OLD and NEW (two tenant names) are required');
  const output = outputOf(values);
  const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
  const res = await connectClient(AdminService, baseUrl, token).handoverTenant({
    old: positionals[0]!,
    new: positionals[1]!,
    zone: values.zone ?? '',
    suffix: values.suffix ?? '',
    dryRun: values['dry-run'] ?? false,
  });
  if (output === 'json') {
    io.out(toJsonString(HandoverTenantResponseSchema, res, { prettySpaces: 2 }));
    return 0;
  }
  const verb = res.dryRun ? 'would hand over' : 'handed over';
  io.out(`tenant "${res.old}" ${verb} ${res.sets.length} ownership row(s) to tenant "${res.new}" (no OVH call)`);
  for (const s of res.sets) io.out(handedLine(s));
  if (res.journalId) io.out(`journal entry ${res.journalId}; undo it with: dnsplane journal revert ${res.journalId}`);
  return 0;
}

export async function runDrain(args: string[], io: CliIo, undrain: boolean): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { zone: { type: 'string' }, output: { type: 'string' }, json: { type: 'boolean' }, server: { type: 'string' }, 'token-file': { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new InvalidInputError('NAME', 'exactly one tenant name is required');
  const output = outputOf(values);
  const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
  const res = await connectClient(AdminService, baseUrl, token).drainTenant({ name: positionals[0]!, zone: values.zone ?? '', undrain });
  if (output === 'json') {
    io.out(toJsonString(DrainTenantResponseSchema, res, { prettySpaces: 2 }));
    return 0;
  }
  const moved = res.targets.filter((t) => t.state !== 'kept').length;
  io.out(
    `tenant "${res.tenant}" ${undrain ? 'undrained' : 'drained'}: ${moved} target(s) ${undrain ? 'restored' : 'withdrawn'}, ${res.targets.length - moved} kept; ${res.calls.length} OVH call(s)`,
  );
  for (const t of res.targets) io.out(`  ${t.dnsName} ${t.recordType} ${t.target} (${t.zone}): ${t.state}${t.why ? ` (${t.why})` : ''}`);
  if (res.journalIds.length > 0) io.out(`journal entries: ${res.journalIds.join(', ')}`);
  return 0;
}
