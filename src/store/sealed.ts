/**
 * Sealed secrets as the tables keep them: the four columns `secret_key_id`, `secret_iv`, `secret_tag`
 * and `secret_ciphertext` of every table that holds secrets the server must be able to read back (TSIG
 * secrets, OVH application secrets). Sealing and opening is core/secrets.ts; this module only knows
 * the columns, and which encryption keys the stored secrets need, for the check at start.
 */
import type { Queryable } from './internal.js';

/** A secret sealed with AES-256-GCM (core/secrets.ts), column by column. */
export interface SealedSecret {
  /** First 8 bytes of the SHA-256 of the encryption key that sealed it. */
  keyId: Buffer;
  /** 12 random bytes, one per sealing. */
  iv: Buffer;
  /** The 16-byte GCM authentication tag. */
  tag: Buffer;
  ciphertext: Buffer;
}

/** The sealed columns as a row reads them. */
export interface SealedRow {
  secret_key_id: Buffer;
  secret_iv: Buffer;
  secret_tag: Buffer;
  secret_ciphertext: Buffer;
}

export const SEALED_COLUMNS = 'secret_key_id, secret_iv, secret_tag, secret_ciphertext';

export function toSealed(r: SealedRow): SealedSecret {
  return { keyId: r.secret_key_id, iv: r.secret_iv, tag: r.secret_tag, ciphertext: r.secret_ciphertext };
}

/** The parameters of a sealed secret, in the order of SEALED_COLUMNS. */
export function sealedParams(s: SealedSecret): Buffer[] {
  return [s.keyId, s.iv, s.tag, s.ciphertext];
}

/** The tables that hold sealed secrets. */
export type SealedTable = 'tsig_keys' | 'ovh_keys';

/**
 * Every table holding sealed secrets, what one of its rows is called in messages, and the column its
 * secret's context is made of (core: `tsig-key:<name>`, `ovh-key:<application key>`).
 */
const SEALED_TABLES: ReadonlyArray<{ table: SealedTable; what: string; label: string }> = [
  { table: 'tsig_keys', what: 'TSIG key', label: 'name' },
  { table: 'ovh_keys', what: 'OVH application secret', label: 'application_key' },
];

/** A stored secret, for a reseal: its table, row, what its context is made of, and the secret as sealed. */
export interface SealedEntry {
  table: SealedTable;
  id: string;
  /** The TSIG key's name, or the OVH key's application key. */
  label: string;
  tenant: string;
  sealed: SealedSecret;
}

/** The stored secrets sealed with any key but `keyId`, at most `limit`, oldest rows first. */
export async function listSealedNotUnder(q: Queryable, keyId: Buffer, limit: number): Promise<SealedEntry[]> {
  const out: SealedEntry[] = [];
  for (const { table, label } of SEALED_TABLES) {
    if (out.length >= limit) break;
    const { rows } = await q.query<SealedRow & { id: string; label: string; tenant: string }>(
      `SELECT s.id::text AS id, s.${label} AS label, t.name AS tenant, ${SEALED_COLUMNS.split(', ').map((c) => `s.${c}`).join(', ')}
         FROM ${table} s JOIN tenants t ON t.id = s.tenant_id
        WHERE s.secret_key_id <> $1 ORDER BY s.id LIMIT $2`,
      [keyId, limit - out.length],
    );
    for (const r of rows) out.push({ table, id: r.id, label: r.label, tenant: r.tenant, sealed: toSealed(r) });
  }
  return out;
}

/**
 * Replaces a row's sealed secret with `after` only if it still holds `before` (a rotation or a delete
 * in between wins: false, nothing written). Whether the row was written.
 */
export async function replaceSealed(q: Queryable, entry: Pick<SealedEntry, 'table' | 'id'>, before: SealedSecret, after: SealedSecret): Promise<boolean> {
  const res = await q.query(
    `UPDATE ${entry.table} SET secret_key_id = $2, secret_iv = $3, secret_tag = $4, secret_ciphertext = $5
      WHERE id = $1 AND secret_key_id = $6 AND secret_iv = $7 AND secret_ciphertext = $8`,
    [entry.id, ...sealedParams(after), before.keyId, before.iv, before.ciphertext],
  );
  return (res.rowCount ?? 0) === 1;
}

export interface SealedUse {
  /** What the rows are, e.g. "TSIG key". */
  what: string;
  /** The encryption key's id (hex) those rows were sealed with. */
  keyId: string;
  count: number;
  /** The names of the tenants whose rows these are, sorted. */
  tenants: string[];
}

/** How many stored secrets each encryption key sealed, per table; empty when none is stored. */
export async function sealedKeyIds(q: Queryable): Promise<SealedUse[]> {
  const out: SealedUse[] = [];
  for (const { table, what } of SEALED_TABLES) {
    const { rows } = await q.query<{ key_id: string; count: string; tenants: string[] }>(
      `SELECT encode(s.secret_key_id, 'hex') AS key_id, count(*)::text AS count, array_agg(DISTINCT t.name ORDER BY t.name) AS tenants
         FROM ${table} s JOIN tenants t ON t.id = s.tenant_id
        GROUP BY s.secret_key_id ORDER BY count(*) DESC`,
    );
    for (const r of rows) out.push({ what, keyId: r.key_id, count: Number(r.count), tenants: r.tenants });
  }
  return out;
}
