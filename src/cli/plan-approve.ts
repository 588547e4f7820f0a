/**
 * `dnsplane plan approve PLAN_ID`: the two-person rule (AdminService.ApprovePlan). An admin other than
 * the one who asked for a stored plan approves it over the change threshold; the plan's tenant then
 * applies it (`dnsplane apply PLAN_ID`) and the threshold does not stop it. Nothing is sent to OVH.
 */
import { parseArgs } from 'node:util';
import { toJsonString } from '@bufbuild/protobuf';
import { InvalidInputError } from '../dns/errors.js';
import { AdminService, ApprovePlanResponseSchema } from '../gen/dnsplane/v1/admin_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { outputOf, type Command } from './command.js';
import { fmtTimestamp } from './visibility.js';

const HELP = `Usage: dnsplane plan approve PLAN_ID [--output text|json | --json]

Approves a stored plan that the change threshold refuses (more than the tenant's limit of its record
sets in a zone updated or deleted) or that changes a protected name ("dnsplane zone protect"), with
an admin token: the plan's tenant then applies it with
"dnsplane apply PLAN_ID" and the threshold does not stop it. The two-person rule: the admin who asked
for the plan (its requested_by: the tenant itself, or the admin of "dnsplane plan --as") cannot
approve it. Refused for a plan not pending, expired, already approved, stale (what it touches changed
since it was made) or with nothing to approve. The approval, the approver and the plan's digest are written
to the journal; an approval is void once the plan goes stale (a new plan needs its own). Nothing is
sent to OVH.

  --output FORMAT       text (default) or json (the ApprovePlanResponse message, Connect JSON)
  --json                the same as --output json
${SERVER_OPTIONS_HELP}`;

export const planApproveCommand: Command = {
  summary: 'approve a stored plan over the change threshold (another admin than the one who asked)',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: { output: { type: 'string' }, json: { type: 'boolean' }, server: { type: 'string' }, 'token-file': { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1) throw new InvalidInputError('PLAN_ID', 'exactly one plan id is required (dnsplane plan prints it)');
    const output = outputOf(values);
    const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    const res = await connectClient(AdminService, baseUrl, token).approvePlan({ id: positionals[0]! });
    if (output === 'json') {
      io.out(toJsonString(ApprovePlanResponseSchema, res, { prettySpaces: 2 }));
      return 0;
    }
    const s = res.summary;
    io.out(
      `Plan ${s?.id ?? positionals[0]} of tenant ${s?.tenant ?? ''} (asked for by ${s?.requestedBy ?? ''}) approved by ${s?.approvedBy ?? ''} at ${fmtTimestamp(s?.approvedAt)}`,
    );
    io.out(`  digest ${s?.approvedDigest ?? ''}; zones ${s?.zones.join(', ') ?? ''}; ${s?.changeCount ?? 0} changes`);
    io.out(`  its tenant applies it: dnsplane apply ${s?.id ?? positionals[0]}`);
    return 0;
  },
};
