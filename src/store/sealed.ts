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

/** Every table holding sealed secrets, and what one of its rows is called in messages. */
const SEALED_TABLES: ReadonlyArray<{ table: string; what: string }> = [
  { table: 'tsig_keys', what: 'TSIG key' },
  { table: 'ovh_keys', what: 'OVH application secret' },
];

export interface SealedUse {
  /** What the rows are, e.g. "TSIG key". */
  what: string;
  /** The encryption key's id (hex) those rows were sealed with. */
  keyId: string;
  count: number;
}

/** How many stored secrets each encryption key sealed, per table; empty when none is stored. */
export async function sealedKeyIds(q: Queryable): Promise<SealedUse[]> {
  const out: SealedUse[] = [];
  for (const { table, what } of SEALED_TABLES) {
    const { rows } = await q.query<{ key_id: string; count: string }>(
      `SELECT encode(secret_key_id, 'hex') AS key_id, count(*)::text AS count FROM ${table} GROUP BY secret_key_id ORDER BY count(*) DESC`,
    );
    for (const r of rows) out.push({ what, keyId: r.key_id, count: Number(r.count) });
  }
  return out;
}
