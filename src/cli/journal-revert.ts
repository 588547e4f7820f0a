/**
 * `dnsplane journal revert ID`: undo of an apply (AdminService.PlanRevert). Stores a plan, for the
 * apply's tenant, that puts back the record sets that apply changed, shows it as `dnsplane plan` does,
 * and lists the record sets left alone because a later apply touched them. Nothing is sent to OVH:
 * the tenant applies the plan with `dnsplane apply PLAN_ID`.
 */
import { parseArgs } from 'node:util';
import { toJsonString } from '@bufbuild/protobuf';
import { InvalidInputError } from '../dns/errors.js';
import { Code, ConnectError } from '@connectrpc/connect';
import { AdminService, PlanRevertResponseSchema, RevertHandoverResponseSchema } from '../gen/dnsplane/v1/admin_pb.js';
import { handedLine } from './tenant-life.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { outputOf, type Command } from './command.js';
import { hasChanges, renderPlan } from './render.js';
import { fmtTimestamp } from './visibility.js';

export const REVERT_HELP = `Usage: dnsplane journal revert ID [--output text|json | --json]

Plans the undo of the apply of journal entry ID (an admin token): a stored plan, for the tenant that
made the apply, that puts the record sets it changed back as they were before it (so they are owned
as before). Shown as "dnsplane plan" shows a plan; nothing is sent to OVH. A record set that a later
apply touched is left as it is and listed as a conflict, with the journal entry that changed it.
The tenant applies the plan with "dnsplane apply PLAN_ID" (stale, nothing sent, if what it puts
back changed since); its journal entry says which entry it reverts.
ID may also be a tenant handover (dnsplane tenant handover): it is undone at once — what the new
tenant still owns of it goes back to the old one, no OVH call — and journaled.

  --output FORMAT       text (default) or json (the PlanRevertResponse message, Connect JSON)
  --json                the same as --output json
${SERVER_OPTIONS_HELP}

Exit code: 0 nothing to put back, 2 a plan with changes, 1 an error.`;

export async function runRevert(args: string[], io: Parameters<Command['run']>[1]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { output: { type: 'string' }, json: { type: 'boolean' }, server: { type: 'string' }, 'token-file': { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1 || !/^[0-9]+$/.test(positionals[0]!)) throw new InvalidInputError('ID', 'exactly one journal id (a number) is required');
  const output = outputOf(values);
  const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
  const client = connectClient(AdminService, baseUrl, token);
  const id = positionals[0]!;
  // A tenant handover is an admin action, not an apply: it is undone at once (no OVH call), not planned.
  const res = await client.planRevert({ journalId: id }).catch(async (e: unknown) => {
    if (!(e instanceof ConnectError) || e.code !== Code.InvalidArgument || !e.rawMessage.includes('admin action (tenant-handover')) throw e;
    const back = await client.revertHandover({ journalId: id });
    if (output === 'json') io.out(toJsonString(RevertHandoverResponseSchema, back, { prettySpaces: 2 }));
    else {
      io.out(
        `Revert of journal entry ${id} (a tenant handover): tenant "${back.old}" gave back ${back.sets.length} ownership row(s) to tenant "${back.new}" (no OVH call); journal entry ${back.journalId}`,
      );
      for (const s of back.sets) io.out(handedLine(s));
      for (const s of back.leftAlone) io.out(`  ! ${handedLine(s).trim()}: left as it is, no longer tenant "${back.old}"'s`);
    }
    return undefined;
  });
  if (res === undefined) return 0;
  if (!res.plan) throw new Error('the server answered no plan');
  const code = hasChanges(res.plan) ? 2 : 0;
  if (output === 'json') {
    io.out(toJsonString(PlanRevertResponseSchema, res, { prettySpaces: 2 }));
    return code;
  }
  io.out(`Revert of journal entry ${res.reverts}: plan ${res.plan.id} for tenant ${res.plan.tenant}`);
  for (const line of renderPlan(res.plan, { color: io.isTty && !io.env['NO_COLOR'] })) io.out(line);
  for (const c of res.conflicts)
    io.out(`  ! ${c.dnsName} ${c.recordType}: left as it is, changed since by journal entry ${c.journalId} (tenant ${c.tenant}, ${fmtTimestamp(c.at)})`);
  return code;
}
