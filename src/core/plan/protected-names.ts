/**
 * Protected names (the two-person rule below the change threshold, core/plan/approvals.ts): an admin marks
 * names of a zone (suffix: and every name below them) protected; a plan that changes a record set at
 * one of them is refused as the change threshold refuses (core/plan/guard.ts), whatever its size and with
 * force too, until an admin other than the one who asked approves it. Marked and lifted with a journal
 * row in the same transaction. `dnsplane zone protect`, AdminService.ProtectNames.
 */
import type pg from 'pg';
import type { Change } from '../../dns/types.js';
import { isInZone, normalizeName } from '../../dns/names.js';
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import { actedBy, auditAdminAction } from '../journal/audit.js';
import { NotFoundError } from '../errors.js';
import type { Tenant } from '../tenants/tenants.js';

/** Whether `name` is protected by one of `rows` (exactly, or below a suffix). */
export function isProtected(name: string, rows: readonly Pick<store.ProtectedName, 'name' | 'suffix'>[]): boolean {
  return rows.some((p) => p.name === name || (p.suffix && isInZone(name, p.name)));
}

/** The names of a zone's changes that are protected, sorted, each once. */
export async function protectedNamesTouched(q: store.Queryable, zone: string, changes: readonly Change[]): Promise<string[]> {
  if (changes.length === 0) return [];
  const rows = await store.listProtectedNames(q, zone);
  if (rows.length === 0) return [];
  const hit = new Set<string>();
  for (const c of changes) {
    const name = (c.after ?? c.before!).dnsName;
    if (isProtected(name, rows)) hit.add(name);
  }
  return [...hit].sort();
}

/** Names as an admin writes them, normalized, each inside the zone ("@": the apex). */
function namesIn(zone: string, raw: readonly string[]): string[] {
  if (raw.length === 0) throw new InvalidInputError('names', 'at least one name is required');
  return [
    ...new Set(
      raw.map((r, i) => {
        const name = r.trim() === '@' ? zone : normalizeName(r.trim(), `names[${i}]`);
        if (!isInZone(name, zone)) throw new InvalidInputError(`names[${i}]`, `"${name}" is not in zone ${zone}`);
        return name;
      }),
    ),
  ];
}

async function managed(q: store.Queryable, rawZone: string): Promise<string> {
  const zone = normalizeName(rawZone.trim(), 'zone');
  if (!(await store.getZone(q, zone))) throw new NotFoundError('zone', zone, `zone: "${zone}" is not a zone dnsplane manages`);
  return zone;
}

/** Protects names of a zone; `actor` null: the command line. The zone's protected names after. */
export async function protectNames(
  pool: pg.Pool,
  actor: Tenant | null,
  rawZone: string,
  raw: readonly string[],
  suffix: boolean,
): Promise<store.ProtectedName[]> {
  return store.withTransaction(pool, async (tx) => {
    const zone = await managed(tx, rawZone);
    const names = namesIn(zone, raw);
    await store.protectNames(tx, zone, names, suffix, actor?.name ?? null);
    await auditAdminAction(
      tx,
      zone,
      actor,
      'protect-names',
      `${suffix ? 'names and everything below them' : 'names'} ${names.join(', ')} of zone ${zone} protected ${actedBy(actor)}: a change there needs a second admin's approval`,
      { zone, names, suffix },
    );
    return store.listProtectedNames(tx, zone);
  });
}

/** Lifts the protection of names (each must be protected). The zone's protected names after. */
export async function unprotectNames(pool: pg.Pool, actor: Tenant | null, rawZone: string, raw: readonly string[]): Promise<store.ProtectedName[]> {
  return store.withTransaction(pool, async (tx) => {
    const zone = await managed(tx, rawZone);
    const names = namesIn(zone, raw);
    const missing = await store.unprotectNames(tx, zone, names);
    if (missing.length > 0)
      throw new InvalidInputError('names', `not protected in zone ${zone}: ${missing.join(', ')} (dnsplane zone protected ${zone} lists them)`);
    await auditAdminAction(tx, zone, actor, 'unprotect-names', `names ${names.join(', ')} of zone ${zone} no longer protected (${actedBy(actor)})`, {
      zone,
      names,
    });
    return store.listProtectedNames(tx, zone);
  });
}

/** `zone` '': every zone's. */
export async function listProtectedNames(q: store.Queryable, rawZone: string): Promise<store.ProtectedName[]> {
  return store.listProtectedNames(q, rawZone.trim() === '' ? undefined : await managed(q, rawZone));
}
