/**
 * The whole content of dnsplane's tables, for "nothing changed" assertions: every row of every table
 * as JSON, in a stable order. Compare two snapshots with toEqual.
 */
import type pg from 'pg';

export const TABLES = [
  'tenants',
  'zones',
  'records',
  'ownership',
  'target_withdrawals',
  'plans',
  'journal',
  'tsig_keys',
  'ovh_keys',
  'ovh_drafts',
  'ovh_record_ids',
] as const;

/**
 * Columns left out: a tenant's last_seen_at (and the address it was seen from, last_seen_from) are a sign
 * of life of any authenticated call, refused or not (core/withdrawals/liveness.ts), written in batches a
 * moment later, not a change.
 */
const LEFT_OUT: Partial<Record<(typeof TABLES)[number], string[]>> = { tenants: ['last_seen_at', 'last_seen_from'] };

export type Snapshot = Record<(typeof TABLES)[number], unknown[]>;

export async function snapshot(pool: pg.Pool): Promise<Snapshot> {
  const out = {} as Snapshot;
  for (const table of TABLES) {
    const left = LEFT_OUT[table];
    const row = left ? `(to_jsonb(t) - ARRAY[${left.map((c) => `'${c}'`).join(', ')}]::text[])` : 'to_jsonb(t)';
    const { rows } = await pool.query<{ row: unknown }>(`SELECT ${row} AS row FROM ${table} t ORDER BY ${row}::text`);
    out[table] = rows.map((r) => r.row);
  }
  return out;
}

/** Everything in the tables as one string, to search for what must never be stored (tokens). */
export async function dumpText(pool: pg.Pool): Promise<string> {
  return JSON.stringify(await snapshot(pool));
}
