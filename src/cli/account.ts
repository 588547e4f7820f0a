/**
 * `dnsplane account add|list|rotate|disable|enable|remove`: the OVH accounts a running dnsplane talks
 * to beside `default` (the OVH_* variables), through AdminService (an admin token), so that every
 * replica uses a change within a notification's delivery (core/accounts/). Credentials come from a
 * file or standard input, never from argv; they are sent to the server, never printed.
 */
import { parseArgs } from 'node:util';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { InvalidInputError } from '../dns/errors.js';
import { AdminService, type OvhAccount } from '../gen/dnsplane/v1/admin_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { readFileFlag, type CliIo, type Command } from './command.js';
import { table } from './text.js';

const HELP = `Usage: dnsplane account add NAME --endpoint ENDPOINT --credentials-file FILE|- [--rate N] [--zones Z1,Z2]
       dnsplane account list
       dnsplane account rotate NAME --credentials-file FILE|-
       dnsplane account disable NAME | enable NAME | remove NAME

OVH accounts beside "default" (the account of the OVH_* variables): each calls its own endpoint with
its own credentials, at its own rate shared by every replica, for its own zones. A running dnsplane
(every replica) uses a change within seconds, with no restart.

add: proves the credentials with one OVH call (the account's zones) and stores nothing when OVH refuses
them (with OVH's reason); then manages the zones of --zones, or every zone the account holds (those of
DNSPLANE_ZONES when it is set). A zone already in another account is refused, naming both: name this
account's other zones with --zones. The credentials are sealed under DNSPLANE_SECRETS_KEYS (the server's)
and resealed by "dnsplane secrets reseal".
rotate: new credentials, proved first the same way. disable: its calls stop at once and its zones are
unavailable; enable: back. remove: its calls stop; its zones (and their journal) stay, unavailable until
an account holding them is added.

  --endpoint ENDPOINT       ovh-eu, ovh-ca, ovh-us, or https://host[:port][/path] (a private endpoint)
  --credentials-file FILE   three lines: OVH_APPLICATION_KEY=…, OVH_APPLICATION_SECRET=…,
                            OVH_CONSUMER_KEY=…; "-" reads them from standard input
  --rate N                  calls per second to this account, shared by every replica [DNSPLANE_OVH_RATE]
  --zones Z1,Z2             the zones to manage in it [every zone it holds]
  --json                    the account(s) as JSON
${SERVER_OPTIONS_HELP}`;

const SUBCOMMANDS = ['add', 'list', 'rotate', 'disable', 'enable', 'remove'];

function when(t: OvhAccount['createdAt']): string {
  return t ? timestampDate(t).toISOString() : '-';
}

function accountJson(a: OvhAccount): Record<string, unknown> {
  return {
    name: a.name,
    endpoint: a.endpoint,
    applicationKey: a.applicationKey,
    rate: a.rate,
    zones: a.zones,
    enabled: a.enabled,
    status: a.status,
    reason: a.reason,
    createdAt: when(a.createdAt),
    rotatedAt: a.rotatedAt ? when(a.rotatedAt) : null,
  };
}

/** The credentials file's text: FILE, or standard input for "-". */
async function credentialsOf(file: string | undefined, io: CliIo): Promise<string> {
  if (file === undefined)
    throw new InvalidInputError(
      '--credentials-file',
      'is required: a file of three lines OVH_APPLICATION_KEY=…, OVH_APPLICATION_SECRET=…, OVH_CONSUMER_KEY=… (or - for standard input)',
    );
  if (file === '-') {
    if (!io.stdin) throw new InvalidInputError('--credentials-file', '"-" needs standard input');
    return io.stdin();
  }
  return readFileFlag(file, '--credentials-file')!;
}

export const accountCommand: Command = {
  summary: 'OVH accounts beside the OVH_* one: add, list, rotate, disable, enable, remove (each its endpoint, rate, zones)',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: {
        endpoint: { type: 'string' },
        'credentials-file': { type: 'string' },
        rate: { type: 'string' },
        zones: { type: 'string' },
        json: { type: 'boolean' },
        server: { type: 'string' },
        'token-file': { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
    const [sub, name, ...extra] = positionals;
    if (!sub || !SUBCOMMANDS.includes(sub))
      throw new InvalidInputError('subcommand', `must be one of ${SUBCOMMANDS.join(', ')}, got ${sub === undefined ? 'none' : `"${sub}"`}`);
    if (extra.length > 0 || (sub === 'list' && name !== undefined)) throw new InvalidInputError('arguments', `unexpected "${extra[0] ?? name}"`);
    if (sub !== 'list' && name === undefined) throw new InvalidInputError('NAME', `the account's name is required: dnsplane account ${sub} NAME`);
    const only = (flags: string[], allowed: string[]) => {
      for (const f of flags)
        if (values[f as keyof typeof values] !== undefined && !allowed.includes(f))
          throw new InvalidInputError(
            `--${f}`,
            `belongs to "dnsplane account ${f === 'credentials-file' ? 'add" or "dnsplane account rotate' : 'add'}", not "dnsplane account ${sub}"`,
          );
    };
    only(
      ['endpoint', 'credentials-file', 'rate', 'zones'],
      sub === 'add' ? ['endpoint', 'credentials-file', 'rate', 'zones'] : sub === 'rotate' ? ['credentials-file'] : [],
    );
    const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    const client = connectClient(AdminService, baseUrl, token);
    let shown: OvhAccount[];
    if (sub === 'list') shown = (await client.listOvhAccounts({})).accounts;
    else if (sub === 'add') {
      if (values.endpoint === undefined) throw new InvalidInputError('--endpoint', 'is required: ovh-eu, ovh-ca, ovh-us or an https:// URL');
      const rate = values.rate === undefined ? 0 : Number(values.rate);
      if (values.rate !== undefined && (!/^[0-9]+$/.test(values.rate) || rate < 1))
        throw new InvalidInputError('--rate', `must be a whole number of calls per second, at least 1, got "${values.rate}"`);
      const zones =
        values.zones === undefined
          ? []
          : values.zones
              .split(',')
              .map((z) => z.trim())
              .filter((z) => z !== '');
      const credentials = await credentialsOf(values['credentials-file'], io);
      const res = await client.addOvhAccount({ name: name!, endpoint: values.endpoint, credentials, rate, zones });
      shown = res.account ? [res.account] : [];
    } else if (sub === 'rotate') {
      const res = await client.rotateOvhAccount({ name: name!, credentials: await credentialsOf(values['credentials-file'], io) });
      shown = res.account ? [res.account] : [];
    } else if (sub === 'remove') shown = [(await client.removeOvhAccount({ name: name! })).account!];
    else shown = [(await client.setOvhAccountEnabled({ name: name!, enabled: sub === 'enable' })).account!];
    if (values.json) {
      io.out(JSON.stringify(sub === 'list' ? shown.map(accountJson) : accountJson(shown[0]!), null, 2));
      return 0;
    }
    if (sub !== 'list') io.out(`${sub === 'add' ? 'added' : sub === 'rotate' ? 'rotated' : sub === 'remove' ? 'removed' : `${sub}d`} OVH account ${name}`);
    if (sub === 'remove') return 0;
    if (shown.length === 0) {
      io.out('no OVH account beside "default" (the OVH_* variables)');
      return 0;
    }
    const rows = [['NAME', 'ENDPOINT', 'APPLICATION KEY', 'RATE', 'ZONES', 'ENABLED', 'STATUS', 'ROTATED']];
    for (const a of shown)
      rows.push([
        a.name,
        a.endpoint,
        a.applicationKey,
        a.rate ? String(a.rate) : 'default',
        a.zones.join(',') || '-',
        a.enabled ? 'yes' : 'no',
        a.status + (a.reason ? ` (${a.reason})` : ''),
        a.rotatedAt ? when(a.rotatedAt) : '-',
      ]);
    for (const line of table(rows)) io.out(line);
    return 0;
  },
};
