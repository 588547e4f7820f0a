/**
 * `dnsplane health-check set|list`: a record set's health checks (docs/failover.md), managed in the
 * database directly like `dnsplane tenant` — the way to give a check to sets written through the
 * served OVH API or DNS UPDATE, which carry no labels.
 */
import { parseArgs } from 'node:util';
import { setHealthCheck } from '../core/health/admin.js';
import { InvalidInputError } from '../dns/errors.js';
import { normalizeName } from '../dns/names.js';
import * as store from '../store/index.js';
import type { Command } from './command.js';
import { withDatabase } from './migrate.js';
import { table } from './text.js';

const HELP = `Usage:
  dnsplane health-check set ZONE NAME TYPE --tenant TENANT URL|off
  dnsplane health-check list ZONE

set: the tenant's check of its targets of the record set NAME TYPE (A or AAAA) of ZONE: a URL with an
  empty host, meaning each target: http://:PORT/PATH, https://:PORT/PATH (SNI and Host: NAME; the
  certificate is not verified) or tcp://:PORT; "off" removes it. No OVH call. A tenant that writes
  the set with labels (Connect, YAML, external-dns's annotation
  external-dns.alpha.kubernetes.io/webhook-dnsplane-health-check) states its check with every write;
  this command is for sets written through the served OVH API or DNS UPDATE, which carry none.
list: every check of the zone, and each checked target's state.

Works on the database directly (DATABASE_URL, or the embedded one under DNSPLANE_DATA_DIR).`;

async function run(sub: string | undefined, rest: string[], io: Parameters<Command['run']>[1]): Promise<number> {
  switch (sub) {
    case 'set': {
      const { values, positionals } = parseArgs({ args: rest, options: { tenant: { type: 'string' } }, allowPositionals: true, strict: true });
      if (positionals.length !== 4) throw new InvalidInputError('arguments', 'ZONE, NAME, TYPE and URL (or "off") are required');
      if (!values.tenant) throw new InvalidInputError('--tenant', 'is required: the owner whose targets the check is for');
      const [zone, name, type, url] = positionals as [string, string, string, string];
      return withDatabase(io, async (db) => {
        const { summary } = await setHealthCheck(db.pool, { zone, name, type, tenant: values.tenant!, check: url === 'off' ? null : url });
        io.out(summary);
        return 0;
      });
    }
    case 'list': {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      if (positionals.length !== 1) throw new InvalidInputError('arguments', 'ZONE is required');
      const zone = normalizeName(positionals[0]!, 'ZONE');
      return withDatabase(io, async (db) => {
        const rows = (await store.listOwnership(db.pool, zone)).filter((r) => r.healthCheck);
        const health = await store.listTargetHealth(db.pool, zone);
        const out = [['NAME', 'TYPE', 'TENANT', 'TARGET', 'CHECK', 'STATE']];
        for (const r of rows) {
          const targets = health.filter((h) => h.dnsName === r.dnsName && h.recordType === r.recordType && (r.target === '' || h.target === r.target));
          if (targets.length === 0) out.push([r.dnsName, r.recordType, r.tenantName, r.target || '(all)', r.healthCheck!, 'unchecked']);
          for (const t of targets)
            out.push([r.dnsName, r.recordType, r.tenantName, t.target, r.healthCheck!, `${t.state}${t.failures ? ` (${t.failures} failed)` : ''}`]);
        }
        for (const line of table(out)) io.out(line);
        return 0;
      });
    }
    default:
      throw new InvalidInputError('health-check', `unknown subcommand "${sub ?? ''}"; use set or list (dnsplane health-check --help)`);
  }
}

export const healthCheckCommand: Command = {
  summary: "a record set's health checks (failover, docs/failover.md): set, list",
  help: HELP,
  run: ([sub, ...rest], io) => run(sub, rest, io),
};
