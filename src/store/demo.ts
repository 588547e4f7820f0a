/**
 * Demo mode's marks in the database: which tenants the demo created itself (tenants.demo), and the
 * check that a database is fit for the demo zone. Only the demo (src/demo/demo.ts) uses these.
 */
import type { Queryable } from './internal.js';

/** 'demo': created by the demo; 'foreign': a tenant of that name the demo did not create; 'absent': none. */
export type DemoMark = 'demo' | 'foreign' | 'absent';

export async function demoMarkOf(q: Queryable, name: string): Promise<DemoMark> {
  const { rows } = await q.query<{ demo: boolean }>('SELECT demo FROM tenants WHERE name = $1', [name]);
  if (!rows[0]) return 'absent';
  return rows[0].demo ? 'demo' : 'foreign';
}

/** Marks a tenant as the demo's own (right after the demo created it, in the same transaction). */
export async function markDemoTenant(q: Queryable, name: string): Promise<void> {
  await q.query('UPDATE tenants SET demo = true WHERE name = $1', [name]);
}

/**
 * Zones this database manages other than `except`, read before anything is written (before the
 * migrations too: a database without the zones table manages none).
 */
export async function zonesOtherThan(q: Queryable, except: string): Promise<string[]> {
  const { rows: table } = await q.query<{ t: string | null }>("SELECT to_regclass('zones')::text AS t");
  if (!table[0]?.t) return [];
  const { rows } = await q.query<{ name: string }>('SELECT name FROM zones WHERE name <> $1 ORDER BY name', [except]);
  return rows.map((r) => r.name);
}
