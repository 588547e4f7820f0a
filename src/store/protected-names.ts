/**
 * The protected_names table (migrations/0021): names of a zone whose changes need a second admin's
 * approval (core/plan/protected-names.ts, core/plan/guard.ts). Read once per plan of a zone.
 */
import { PG_FOREIGN_KEY_VIOLATION, errorCode, type Queryable } from './internal.js';
import { NotFoundError } from './errors.js';

export interface ProtectedName {
  zone: string;
  /** Lowercase, no trailing dot. */
  name: string;
  /** The name and every name below it. */
  suffix: boolean;
  createdAt: Date;
  /** The admin who protected it; null: the command line. */
  createdBy: string | null;
}

interface Row {
  zone: string;
  name: string;
  suffix: boolean;
  created_at: Date;
  created_by: string | null;
}

const toProtected = (r: Row): ProtectedName => ({ zone: r.zone, name: r.name, suffix: r.suffix, createdAt: r.created_at, createdBy: r.created_by });

/** `zone` undefined: every zone's; by zone, then name. */
export async function listProtectedNames(q: Queryable, zone?: string): Promise<ProtectedName[]> {
  const { rows } = await q.query<Row>(
    `SELECT zone, name, suffix, created_at, created_by FROM protected_names
      WHERE ($1::text IS NULL OR zone = $1) ORDER BY zone, name`,
    [zone ?? null],
  );
  return rows.map(toProtected);
}

/** Protects names of a zone (a name protected already takes the new `suffix`). NotFoundError when the zone is not managed. */
export async function protectNames(q: Queryable, zone: string, names: readonly string[], suffix: boolean, by: string | null): Promise<void> {
  try {
    await q.query(
      `INSERT INTO protected_names (zone, name, suffix, created_by)
       SELECT $1, n, $3, $4 FROM unnest($2::text[]) AS n
       ON CONFLICT (zone, name) DO UPDATE SET suffix = EXCLUDED.suffix`,
      [zone, names, suffix, by],
    );
  } catch (err) {
    if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) throw new NotFoundError('zone', zone);
    throw err;
  }
}

/** Lifts the protection of names; the names that were not protected. */
export async function unprotectNames(q: Queryable, zone: string, names: readonly string[]): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(`DELETE FROM protected_names WHERE zone = $1 AND name = ANY($2::text[]) RETURNING name`, [zone, names]);
  const removed = new Set(rows.map((r) => r.name));
  return names.filter((n) => !removed.has(n));
}
