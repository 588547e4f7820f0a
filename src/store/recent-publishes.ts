/**
 * The latest publishes of each zone (journal rows with a published_at), newest first: what the
 * console's zones page shows as each zone's publish-to-visible delays (ZoneService.ListZones). One
 * statement for every zone asked, each walking its zone's journal index backwards.
 */
import type { Queryable } from './internal.js';

/** zone -> its latest `perZone` published journal ids, newest first (zones with none are absent). */
export async function recentPublishes(q: Queryable, zones: readonly string[], perZone: number): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (zones.length === 0 || perZone <= 0) return out;
  const { rows } = await q.query<{ zone: string; id: string }>(
    `SELECT z.zone, j.id::text AS id
       FROM unnest($1::text[]) AS z(zone)
       CROSS JOIN LATERAL (
         SELECT id FROM journal WHERE journal.zone = z.zone AND published_at IS NOT NULL ORDER BY id DESC LIMIT $2
       ) j
      ORDER BY z.zone, j.id DESC`,
    [[...zones], perZone],
  );
  for (const r of rows) out.set(r.zone, [...(out.get(r.zone) ?? []), r.id]);
  return out;
}
