/**
 * `dnsplane tenant handover|drain|undrain`: a cluster's life (issue 46; docs/ownership.md "Handover"), over the API
 * with an admin token (AdminService.HandoverTenant), as `journal revert` is: the server judges and
 * moves the ownership under the zones' locks, and every replica hears it.
 */
import { parseArgs } from 'node:util';
import { toJsonString } from '@bufbuild/protobuf';
import { InvalidInputError } from '../dns/errors.js';
import {
  AdminService,
  DrainTenantResponseSchema,
  HandoverTenantResponseSchema,
  RetireTenantResponseSchema,
  type HandedSet,
} from '../gen/dnsplane/v1/admin_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { outputOf, type CliIo } from './command.js';

export const LIFE_HELP = `Usage:
  dnsplane tenant handover OLD NEW [--zone ZONE] [--suffix SUFFIX] [--dry-run] [--output text|json]
  dnsplane tenant drain NAME [--zone ZONE] [--output text|json]
  dnsplane tenant undrain NAME [--zone ZONE] [--output text|json]
  dnsplane tenant retire NAME --handover-to OTHER | --delete-records [--plan PLAN_ID] [--output text|json]

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

retire: ends the tenant cleanly, never leaving records owned by a disabled tenant: --handover-to
  OTHER hands everything it owns to OTHER (as handover, no OVH call); --delete-records deletes its
  records with an apply (a plan of its desired state "nothing", applied as it): the change threshold
  applies — over it nothing is sent, the plan stays pending, a second admin approves it (dnsplane plan
  approve PLAN_ID) and the retire is run again with --plan PLAN_ID. Then the tenant is disabled and
  marked retired. Journalled.

  --output FORMAT       text (default) or json (the answer message, Connect JSON)
${SERVER_OPTIONS_HELP}

Needs an admin token (the command talks to the server, unlike tenant create).`;

/** The options every command here takes: the answer's format and the server to ask (cli/client.ts). */
export const API_OPTIONS = {
  output: { type: 'string' },
  json: { type: 'boolean' },
  server: { type: 'string' },
  'token-file': { type: 'string' },
} as const;

/** Connects to the server with the options given (API_OPTIONS). */
export function adminClientOf(values: { server?: string | undefined; 'token-file'?: string | undefined }, io: CliIo) {
  const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
  return connectClient(AdminService, baseUrl, token);
}

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
      ...API_OPTIONS,
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 2) throw new InvalidInputError('arguments', 'OLD and NEW (two tenant names) are required');
  const output = outputOf(values);
  const res = await adminClientOf(values, io).handoverTenant({
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
    options: { zone: { type: 'string' }, ...API_OPTIONS },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new InvalidInputError('NAME', 'exactly one tenant name is required');
  const output = outputOf(values);
  const res = await adminClientOf(values, io).drainTenant({ name: positionals[0]!, zone: values.zone ?? '', undrain });
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

export async function runRetire(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      'handover-to': { type: 'string' },
      'delete-records': { type: 'boolean' },
      plan: { type: 'string' },
      ...API_OPTIONS,
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new InvalidInputError('NAME', 'exactly one tenant name is required');
  if ((values['handover-to'] === undefined) === !values['delete-records'])
    throw new InvalidInputError('--handover-to', 'say either --handover-to OTHER or --delete-records, not both nor neither');
  const output = outputOf(values);
  const res = await adminClientOf(values, io).retireTenant({
    name: positionals[0]!,
    handoverTo: values['handover-to'] ?? '',
    deleteRecords: values['delete-records'] ?? false,
    planId: values.plan ?? '',
  });
  if (output === 'json') {
    io.out(toJsonString(RetireTenantResponseSchema, res, { prettySpaces: 2 }));
    return 0;
  }
  if (res.handover) io.out(`tenant "${res.tenant}" handed over ${res.handover.sets.length} ownership row(s) to tenant "${res.handover.new}" (no OVH call)`);
  else io.out(`tenant "${res.tenant}": its records deleted${res.planId ? ` by plan ${res.planId}` : ' (it owned none)'}; ${res.calls.length} OVH call(s)`);
  io.out(`tenant "${res.tenant}" retired and disabled; journal entry ${res.journalId}`);
  return 0;
}
