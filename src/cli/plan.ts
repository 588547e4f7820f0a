/**
 * `dnsplane plan -f FILE`: the desired endpoints of a YAML or JSON file, planned by a running dnsplane
 * (ZoneService.Plan as the token's tenant, or AdminService.PlanAs with --as for an admin) and shown
 * as a diff (render.ts) or as JSON. Exit code: 0 no changes, 2 changes, 1 errors (main.ts).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { create, toJsonString } from '@bufbuild/protobuf';
import { parseDesiredDocument, POLICIES, type DesiredFile } from '../api/desired-document.js';
import { InvalidInputError } from '../dns/errors.js';
import { AdminService } from '../gen/dnsplane/v1/admin_pb.js';
import { PlanRequestSchema, PlanSchema, Policy, ZoneService, type Plan } from '../gen/dnsplane/v1/zone_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import type { Command } from './command.js';
import { hasChanges, renderPlan } from './render.js';
import { desiredFromZoneFile } from '../api/zone-file-document.js';
import { planApproveCommand } from './plan-approve.js';

const HELP = `Usage: dnsplane plan (-f FILE | --zone-file FILE) [--as TENANT] [--policy POLICY] [--zone ZONE …] [--force] [--output text|json]
       dnsplane plan approve PLAN_ID     (an admin approves a plan over the change threshold: see its --help)

Plans the desired state in FILE (YAML or JSON) and prints what applying it would do, terraform style:
  + create   ~ update (old -> new)   - delete   ! conflict (the owner, and why)
with the exact OVH calls under each change. Nothing is sent to OVH; the plan is stored, and
"dnsplane apply PLAN_ID" applies it.

FILE holds a list of endpoints, or {zones: [...], policy: ..., endpoints: [...]}; an endpoint is
  {dnsName, recordType, targets: [...], ttl, labels}   (also dns_name/name, record_type/type, recordTTL)
Label dnsplane/shared: "true" on a new A, AAAA, TXT, MX or SRV set makes it a shared set.

  -f, --file FILE       the desired state
  --zone-file FILE      the desired state as an RFC 1035 zone file (what "dnsplane zone export"
                        writes): its record sets, in the zone of its $ORIGIN (or --zone ZONE), policy
                        sync unless --policy says otherwise; the SOA is skipped; a type dnsplane does
                        not manage, or a target not valid for its type, is an error naming the line
  --as TENANT           plan on behalf of TENANT (an admin token; AdminService.PlanAs, a dry run)
  --policy POLICY       sync (default: your other records in these zones are deleted), upsert-only,
                        create-only; overrides the file's
  --zone ZONE           a zone the desired state covers (repeatable), added to the file's
  --force               store the plan as forced: applying it is not stopped by the change threshold
                        (more than DNSPLANE_MAX_CHANGE_PERCENT of your record sets in a zone updated
                        or deleted); the plan shows the counts either way
  --output FORMAT       text (default) or json (the Plan message, Connect JSON)
${SERVER_OPTIONS_HELP}

Exit code: 0 no changes, 2 changes, 1 error. Colours only on a terminal (and never with NO_COLOR).`;

function readText(file: string, option: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new InvalidInputError(option, `cannot read "${file}": ${(e as Error).message}`);
  }
}

export function readDesiredFile(file: string): DesiredFile {
  return parseDesiredDocument(readText(file, '--file'), file);
}

export const planCommand: Command = {
  summary: 'plan a desired state from a YAML/JSON file and show the diff (exit 2 when there are changes)',
  help: HELP,
  helpFor: (args) => (args[0] === 'approve' ? planApproveCommand.help : HELP),
  async run(args, io) {
    if (args[0] === 'approve') return planApproveCommand.run(args.slice(1), io);
    const { values, positionals } = parseArgs({
      args,
      options: {
        file: { type: 'string', short: 'f' },
        'zone-file': { type: 'string' },
        as: { type: 'string' },
        policy: { type: 'string' },
        zone: { type: 'string', multiple: true },
        force: { type: 'boolean' },
        output: { type: 'string' },
        server: { type: 'string' },
        'token-file': { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length > 0) throw new InvalidInputError('arguments', `unexpected "${positionals[0]}"; the desired state goes in -f FILE`);
    if (values.file !== undefined && values['zone-file'] !== undefined)
      throw new InvalidInputError('--zone-file', 'give the desired state once: -f FILE or --zone-file FILE');
    if (values.file === undefined && values['zone-file'] === undefined)
      throw new InvalidInputError('--file', 'the desired state is required: -f FILE (YAML or JSON) or --zone-file FILE');
    if (values['zone-file'] !== undefined && (values.zone?.length ?? 0) > 1)
      throw new InvalidInputError('--zone', 'a zone file holds one zone: give at most one --zone');
    const output = values.output ?? 'text';
    if (output !== 'text' && output !== 'json') throw new InvalidInputError('--output', `must be text or json, got "${output}"`);
    if (values.policy !== undefined && POLICIES[values.policy] === undefined) {
      throw new InvalidInputError('--policy', `must be one of ${Object.keys(POLICIES).join(', ')}, got "${values.policy}"`);
    }
    const zoneFile = values['zone-file'];
    const desired = zoneFile !== undefined ? desiredFromZoneFile(readText(zoneFile, '--zone-file'), zoneFile, values.zone?.[0]) : readDesiredFile(values.file!);
    const zones = zoneFile !== undefined ? desired.zones : [...desired.zones, ...(values.zone ?? [])];
    const request = create(PlanRequestSchema, {
      policy: values.policy !== undefined ? POLICIES[values.policy] : (desired.policy ?? Policy.SYNC),
      input: { case: 'desired', value: { zones, endpoints: desired.endpoints } },
      force: values.force ?? false,
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
