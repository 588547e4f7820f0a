/**
 * `dnsplane ownership orphans`: what nobody will ever write again (AdminService.ListOrphans,
 * core/admin/orphans.ts), over the API with an admin token.
 */
import { parseArgs } from 'node:util';
import { toJsonString } from '@bufbuild/protobuf';
import { parseDuration } from '../config/config.js';
import { InvalidInputError } from '../dns/errors.js';
import { ListOrphansResponseSchema } from '../gen/dnsplane/v1/admin_pb.js';
import { SERVER_OPTIONS_HELP } from './client.js';
import { adminClientOf, API_OPTIONS } from './tenant-life.js';
import { outputOf, type Command } from './command.js';
import { table } from './text.js';

const HELP = `Usage: dnsplane ownership orphans [--zone ZONE] [--silent-for DURATION] [--output text|json]

orphans: the record sets (and targets of shared sets) nobody will ever write again, with their age:
  owned by a disabled tenant ("disabled"), owned by a tenant with no authenticated call for longer
  than --silent-for [30d] ("silent"; never seen: since it owned them), and the records of managed zones
  nobody owns ("unowned": made by hand or left by a tool; dnsplane never touches them until an admin
  assigns them). AGE is how long the owner has been quiet. Adopt them (AssignOwnership, dnsplane tenant
  handover), retire their owner (dnsplane tenant retire) or delete them by hand.

  --output FORMAT       text (default) or json (the ListOrphansResponse message, Connect JSON)
${SERVER_OPTIONS_HELP}`;

function age(seconds: bigint): string {
  const s = Number(seconds);
  return s >= 86_400 ? `${Math.floor(s / 86_400)}d` : s >= 3600 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 60)}m`;
}

export const ownershipCommand: Command = {
  summary: 'ownership orphans: what nobody will write again (disabled or silent owners, unowned records), with its age',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: {
        zone: { type: 'string' },
        'silent-for': { type: 'string' },
        ...API_OPTIONS,
      },
      allowPositionals: true,
      strict: true,
    });
    if (positionals[0] !== 'orphans' || positionals.length !== 1)
      throw new InvalidInputError('subcommand', `must be "orphans", got "${positionals.join(' ')}"`);
    const output = outputOf(values);
    const silentMs = values['silent-for'] === undefined ? 0 : parseDuration(values['silent-for'], '--silent-for');
    const res = await adminClientOf(values, io).listOrphans({ zone: values.zone ?? '', silentForSeconds: Math.round(silentMs / 1000) });
    if (output === 'json') {
      io.out(toJsonString(ListOrphansResponseSchema, res, { prettySpaces: 2 }));
      return 0;
    }
    const rows = [['ZONE', 'NAME', 'TYPE', 'TARGET', 'OWNER', 'WHY', 'AGE']];
    for (const o of res.orphans)
      rows.push([
        o.zone,
        o.dnsName,
        o.recordType,
        o.target || o.targets.join(',') || '-',
        o.tenant || '-',
        o.reason,
        o.reason === 'unowned' ? '-' : age(o.ageSeconds),
      ]);
    for (const line of table(rows)) io.out(line);
    io.out(`${res.orphans.length} orphan(s); silent means no call for ${age(BigInt(res.silentForSeconds))}`);
    return 0;
  },
};
