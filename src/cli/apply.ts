/**
 * `dnsplane apply PLAN_ID [--wait]`: applies a stored plan (ZoneService.Apply) and prints, per zone,
 * how it ended and the OVH calls made; with --wait, also where each publish stands on the zone's
 * authoritative servers once final (or at the wait's end). Exit code 0 when every zone applied (or had
 * nothing to do) and, with --wait, is visible; 2 when applied but not shown visible; 1 otherwise (a
 * stale or expired plan, a failed and rolled-back zone, an error).
 */
import { parseArgs } from 'node:util';
import { toJsonString } from '@bufbuild/protobuf';
import { InvalidInputError } from '../dns/errors.js';
import { ApplyResponseSchema, ApplyStatus, ZoneService } from '../gen/dnsplane/v1/zone_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { outputOf, type Command } from './command.js';
import { EXIT_NOT_VISIBLE, isVisible, visibilityHeadline, visibilityLines, waitFromArgs, WAIT_OPTIONS, WAIT_OPTIONS_HELP } from './visibility.js';

const HELP = `Usage: dnsplane apply PLAN_ID [--force] [--wait [--wait-timeout D]] [--output text|json | --json]

Applies a plan stored by "dnsplane plan" (as the tenant the plan is for). Ownership is checked again;
a plan whose record sets or ownership changed since it was made (what it touches; changes elsewhere
in the zone do not count) is stale: nothing is sent, make a new plan. Prints, per zone, the outcome and the OVH calls made with their answers, and the journal id
of its publish ("dnsplane journal show ID" tells later whether it is visible).

  --force               apply even when the plan updates or deletes more than your change threshold
                        (DNSPLANE_MAX_CHANGE_PERCENT of the record sets you own in a zone) allows
${WAIT_OPTIONS_HELP}
  --output FORMAT       text (default) or json (the ApplyResponse message, Connect JSON)
  --json                the same as --output json
${SERVER_OPTIONS_HELP}

Exit code: 0 applied (or nothing to do) and, with --wait, visible; ${EXIT_NOT_VISIBLE} applied but, with --wait,
not shown visible (yet, or at all); 1 otherwise.`;

const STATUS: Record<number, string> = {
  [ApplyStatus.APPLIED]: 'applied',
  [ApplyStatus.NO_CHANGES]: 'no changes',
  [ApplyStatus.STALE]: 'stale (nothing sent)',
  [ApplyStatus.FAILED]: 'failed (rolled back, nothing published)',
};

export const applyCommand: Command = {
  summary: 'apply a stored plan: dnsplane apply PLAN_ID',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: {
        ...WAIT_OPTIONS,
        output: { type: 'string' },
        json: { type: 'boolean' },
        force: { type: 'boolean' },
        server: { type: 'string' },
        'token-file': { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1) throw new InvalidInputError('PLAN_ID', 'exactly one plan id is required (dnsplane plan prints it)');
    const output = outputOf(values);
    const wait = waitFromArgs(values);
    const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    const res = await connectClient(ZoneService, baseUrl, token).apply({
      source: { case: 'planId', value: positionals[0]! },
      force: values.force ?? false,
      ...wait,
    });
    // A server in dry-run mode (DNSPLANE_DRY_RUN) sent nothing on purpose: not an error.
    const ok = res.zones.every((z) => ['APPLIED', 'NO_CHANGES', 'DRY_RUN'].includes(ApplyStatus[z.status] ?? ''));
    // Every publish of the call: each zone's, and each batch's of a zone applied in batches.
    const publishes = res.zones.flatMap((z) => [
      ...z.batches.filter((b) => b.journalId !== z.journalId).map((b) => b.visibility),
      ...(z.journalId ? [z.visibility] : []),
    ]);
    const visible = !values.wait || publishes.every(isVisible);
    const code = !ok ? 1 : visible ? 0 : EXIT_NOT_VISIBLE;
    if (output === 'json') {
      io.out(toJsonString(ApplyResponseSchema, res, { prettySpaces: 2 }));
      return code;
    }
    io.out(`Plan ${res.planId}:`);
    for (const z of res.zones) {
      const status = STATUS[z.status] ?? ApplyStatus[z.status]?.toLowerCase().replace(/_/g, ' ') ?? String(z.status);
      io.out(
        `  ${z.zone}: ${status}, generation ${z.generation}, ${z.calls.length} OVH call${z.calls.length === 1 ? '' : 's'}${z.journalId ? `, journal ${z.journalId}` : ''}`,
      );
      for (const c of z.calls) io.out(`      ${c.method} ${c.path} -> ${c.status}${c.error ? ` ${c.error}` : ''}`);
      for (const c of z.conflicts)
        io.out(`  ! ${c.endpoint?.dnsName ?? ''} ${c.endpoint?.recordType ?? ''}, ${c.owner ? `owner "${c.owner}"` : 'no owner'}: ${c.reason}`);
      for (const b of z.batches)
        if (b.visibility && b.journalId !== z.journalId) io.out(`    batch ${b.index} (journal ${b.journalId}): ${visibilityHeadline(b.visibility)}`);
      if (z.visibility) for (const l of visibilityLines(z.visibility, '    ')) io.out(l);
      if (z.error) io.err(`  ${z.zone}: ${z.error}`);
    }
    return code;
  },
};
