/**
 * `dnsplane journal prune --older-than D`: deletes the journal's rows finished before a horizon and the
 * plans of that age nothing refers to (core/journal/prune.ts), in the database directly like `dnsplane
 * tenant` (beside a running serve through its connection file). Meant for a schedule (a Kubernetes
 * CronJob, docs/operations.md "Journal retention").
 */
import { parseArgs } from 'node:util';
import { parseDuration } from '../config/config.js';
import { checkPruneAge, MIN_PRUNE_AGE_MS, pruneJournal } from '../core/journal/prune.js';
import { InvalidInputError } from '../dns/errors.js';
import type { Command } from './command.js';
import { withDatabase } from './migrate.js';

export const PRUNE_HELP = `Usage: dnsplane journal prune --older-than DURATION [--dry-run] [--json]

Deletes the journal entries (applies and admin actions) that finished more than DURATION ago (e.g.
2160h or 90d; at least ${MIN_PRUNE_AGE_MS / 3_600_000}h), and the plans made before then that are no longer pending and that no
entry left refers to. An apply still in flight is never deleted. The journal is dnsplane's audit log
and what "journal revert" and "zone at" read: each grows by every apply (2–3 KB a row with its
indexes) and nothing else removes them, so run this on a schedule that matches how long you keep
audit logs. Afterwards "zone at" refuses a time (or generation) before the horizon, naming it, rather
than answer a zone that never was; the prune itself is a journal entry ("prune-journal", saying how
many entries and plans it deleted, and who asked).

Works on the database directly (DATABASE_URL, or the embedded Postgres under DNSPLANE_DATA_DIR;
beside a running "dnsplane serve", through its connection file), in batches of 5,000 rows, each its
own transaction: applies go on meanwhile. One stopped midway is finished by running it again.

  --older-than DURATION  entries finished before now minus DURATION go (required)
  --dry-run              count what would go; delete and write nothing
  --json                 the answer as JSON: { before, entries, plans, zones, dryRun }`;

export async function runPrune(args: string[], io: Parameters<Command['run']>[1]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'older-than': { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0) throw new InvalidInputError('arguments', `unexpected "${positionals[0]}" (dnsplane journal prune --help)`);
  if (values['older-than'] === undefined) throw new InvalidInputError('--older-than', 'is required: how old an entry must be to go (e.g. 90d)');
  const olderThanMs = parseDuration(values['older-than'], '--older-than');
  checkPruneAge(olderThanMs, '--older-than'); // before the database is opened (and migrated)
  const dryRun = values['dry-run'] === true;
  const r = await withDatabase(io, (db) => pruneJournal(db.pool, { olderThanMs, field: '--older-than', dryRun }));
  if (values.json) {
    io.out(JSON.stringify({ before: r.before.toISOString(), entries: r.entries, plans: r.plans, zones: r.zones, dryRun: r.dryRun }, null, 2));
    return 0;
  }
  const what = `${r.entries} journal entries and ${r.plans} plans finished before ${r.before.toISOString()}`;
  if (r.dryRun) io.out(`would delete ${what}; nothing was deleted (--dry-run)`);
  else {
    io.out(`deleted ${what}`);
    if (r.zones.length) io.out(`"dnsplane zone at" now goes back to ${r.before.toISOString()} at the earliest for ${r.zones.join(', ')}`);
  }
  return 0;
}
