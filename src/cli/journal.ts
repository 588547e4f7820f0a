/**
 * `dnsplane journal show ID`: one apply's journal row and where its publish stands on the zone's
 * authoritative servers (ZoneService.GetApply), optionally waiting until it is final.
 */
import { parseArgs } from 'node:util';
import { create, toJsonString } from '@bufbuild/protobuf';
import { InvalidInputError } from '../dns/errors.js';
import { GetApplyResponseSchema, ZoneService, type GetApplyResponse } from '../gen/dnsplane/v1/zone_pb.js';
import { VisibilitySchema } from '../gen/dnsplane/v1/visibility_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { outputOf, type Command } from './command.js';
import { PRUNE_HELP, runPrune } from './journal-prune.js';
import { REVERT_HELP, runRevert } from './journal-revert.js';
import { EXIT_NOT_VISIBLE, fmtTimestamp, isVisible, visibilityLines, waitFromArgs, WAIT_OPTIONS, WAIT_OPTIONS_HELP } from './visibility.js';

const HELP = `Usage: dnsplane journal show ID [--wait [--wait-timeout D]] [--output text|json | --json]
       dnsplane journal revert ID       (plan the undo of an apply: see its --help)
       dnsplane journal prune --older-than DURATION   (delete old entries: see its --help)

Shows one apply (ID: its journal row, printed by "dnsplane apply" and in ZoneApplyResult.journal_id)
and where its publish stands on the zone's authoritative servers: published, then visible — with the
time each server first answered it —, or not visible (which server still answers which names with
old data), unverified (no server could be asked) or superseded by a later change. Your own applies;
with an admin token, anyone's.

${WAIT_OPTIONS_HELP}
  --output FORMAT       text (default) or json (the GetApplyResponse message, Connect JSON)
  --json                the same as --output json
${SERVER_OPTIONS_HELP}

Exit code: 0 visible, ${EXIT_NOT_VISIBLE} not shown visible (not yet, not visible, unverified, superseded, or nothing
was published), 1 an error.`;

export function applyLines(a: GetApplyResponse): string[] {
  return [
    `Apply ${a.journalId}: zone ${a.zone}, tenant ${a.tenant}, ${a.planId ? `plan ${a.planId}` : a.summary || 'inline (plan and apply in one call)'}, ${a.state}`,
    `  started ${fmtTimestamp(a.startedAt)}, finished ${fmtTimestamp(a.finishedAt)}${a.clientAddress ? `, from ${a.clientAddress}` : ''}${a.account && a.account !== 'default' ? `, OVH account ${a.account}` : ''}`,
    ...(a.error ? [`  error: ${a.error}`] : []),
    ...visibilityLines(a.visibility ?? create(VisibilitySchema)),
  ];
}

export const journalCommand: Command = {
  summary: 'one apply and whether it is visible yet: dnsplane journal show ID [--wait]; its undo: journal revert ID; old entries: journal prune',
  help: HELP,
  helpFor: (args) => (args[0] === 'revert' ? REVERT_HELP : args[0] === 'prune' ? PRUNE_HELP : HELP),
  async run(args, io) {
    if (args[0] === 'revert') return runRevert(args.slice(1), io);
    if (args[0] === 'prune') return runPrune(args.slice(1), io);
    const { values, positionals } = parseArgs({
      args,
      options: { ...WAIT_OPTIONS, output: { type: 'string' }, json: { type: 'boolean' }, server: { type: 'string' }, 'token-file': { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals[0] !== 'show')
      throw new InvalidInputError('subcommand', `must be "show", "revert" or "prune", got ${positionals[0] === undefined ? 'none' : `"${positionals[0]}"`}`);
    if (positionals.length !== 2 || !/^[0-9]+$/.test(positionals[1]!)) throw new InvalidInputError('ID', 'exactly one journal id (a number) is required');
    const output = outputOf(values);
    const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    const res = await connectClient(ZoneService, baseUrl, token).getApply({ journalId: positionals[1]!, ...waitFromArgs(values) });
    const code = isVisible(res.visibility) ? 0 : EXIT_NOT_VISIBLE;
    if (output === 'json') io.out(toJsonString(GetApplyResponseSchema, res, { prettySpaces: 2 }));
    else for (const l of applyLines(res)) io.out(l);
    return code;
  },
};
