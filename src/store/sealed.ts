/**
 * Sealed secrets as the tables keep them: the four columns `secret_key_id`, `secret_iv`, `secret_tag`
 * and `secret_ciphertext` of every table that holds secrets the server must be able to read back (TSIG
 * secrets, OVH application secrets). Sealing and opening is core/keys/secrets.ts; this module only knows
 * the columns, and which encryption keys the stored secrets need, for the check at start.
 */
import type { Queryable } from './internal.js';

/** A secret sealed with AES-256-GCM (core/keys/secrets.ts), column by column. */
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

/**
 * The secret a rotation with a grace replaced (migrations/0021), kept sealed beside the current one in
 * the same four columns prefixed `previous_`, until `previous_valid_until`.
 */
export interface PreviousSealedRow {
  previous_secret_key_id: Buffer | null;
  previous_secret_iv: Buffer | null;
  previous_secret_tag: Buffer | null;
  previous_secret_ciphertext: Buffer | null;
  previous_valid_until: Date | null;
}

export const PREVIOUS_SEALED_COLUMNS = 'previous_secret_key_id, previous_secret_iv, previous_secret_tag, previous_secret_ciphertext, previous_valid_until';

/** The replaced secret and until when it is accepted; undefined: none (the constraint keeps them whole). */
export function toPreviousSealed(r: PreviousSealedRow): { sealed: SealedSecret; validUntil: Date } | undefined {
  if (!r.previous_valid_until || !r.previous_secret_key_id || !r.previous_secret_iv || !r.previous_secret_tag || !r.previous_secret_ciphertext)
    return undefined;
  return {
    sealed: { keyId: r.previous_secret_key_id, iv: r.previous_secret_iv, tag: r.previous_secret_tag, ciphertext: r.previous_secret_ciphertext },
    validUntil: r.previous_valid_until,
  };
}

/**
 * The SET clause of a rotation (parameters from `$first`: the new secret's four columns, then the
 * grace in ms): with a grace > 0 the current secret moves to the `previous_` columns until now() + the
 * grace; without, they are cleared. A grace running from an earlier rotation ends either way.
 */
export function rotateSealedSet(first: number): string {
  const p = (i: number) => `$${first + i}`;
  const grace = `${p(4)}::bigint`;
  const keep = (col: string) => `previous_${col} = CASE WHEN ${grace} > 0 THEN ${col} END`;
  return `${SEALED_COLUMNS.split(', ').map(keep).join(', ')},
          previous_valid_until = CASE WHEN ${grace} > 0 THEN now() + ${grace} * interval '1 millisecond' END,
          (${SEALED_COLUMNS}) = (${p(0)}, ${p(1)}, ${p(2)}, ${p(3)})`;
}

/** The parameters of a sealed secret, in the order of SEALED_COLUMNS. */
export function sealedParams(s: SealedSecret): Buffer[] {
  return [s.keyId, s.iv, s.tag, s.ciphertext];
}

/** The tables that hold sealed secrets. */
export type SealedTable = 'tsig_keys' | 'ovh_keys' | 'ovh_accounts';

/** A tenant's keys: owned by the tenant of the row, with a grace's replaced secret beside the current one. */
const OF_TENANT = { owner: 't.name', from: 'JOIN_TENANT', grace: true } as const;

/**
 * Every table holding sealed secrets, what one of its rows is called in messages, and the column its
 * secret's context is made of (core: `tsig-key:<name>`, `ovh-key:<application key>`).
 */
const SEALED_TABLES: ReadonlyArray<{ table: SealedTable; what: string; label: string; owner: string; from: string; grace: boolean }> = [
  { table: 'tsig_keys', what: 'TSIG key', label: 'name', ...OF_TENANT },
  { table: 'ovh_keys', what: 'OVH application secret', label: 'application_key', ...OF_TENANT },
  // An OVH account's credentials (migrations/0027) belong to no tenant: named "account NAME" where a tenant would be.
  { table: 'ovh_accounts', what: 'OVH account credential', label: 'name', owner: `'account ' || s.name`, from: 'ovh_accounts s', grace: false },
];

/** Each table's current secrets, and the ones a rotation with a grace replaced (the `previous_` columns, set or not). */
const SEALED_SLOTS = SEALED_TABLES.flatMap((t) => [
  { ...t, prefix: '' as SealedSlot },
  ...(t.grace ? [{ ...t, what: `${t.what} (replaced, in its grace)`, prefix: 'previous_' as SealedSlot }] : []),
]);

/** Which of a row's sealed secrets: the current one, or the one a rotation with a grace replaced. */
export type SealedSlot = '' | 'previous_';

/** A table's FROM clause, aliased `s` (and its tenant `t` when the rows are a tenant's). */
function fromOf(table: SealedTable, from: string): string {
  return from === 'JOIN_TENANT' ? `${table} s JOIN tenants t ON t.id = s.tenant_id` : from;
}

function slotColumns(prefix: SealedSlot, alias = ''): string[] {
  return SEALED_COLUMNS.split(', ').map((c) => `${alias}${prefix}${c}`);
}

/** A stored secret, for a reseal: its table, row, what its context is made of, and the secret as sealed. */
export interface SealedEntry {
  table: SealedTable;
  /** The current secret (''), or the replaced one still in its grace ('previous_'). */
  slot: SealedSlot;
  id: string;
  /** The TSIG key's name, the OVH key's application key, or the OVH account's name. */
  label: string;
  /** The key's tenant; for an OVH account, "account NAME". */
  tenant: string;
  sealed: SealedSecret;
}

/** The stored secrets sealed with any key but `keyId`, at most `limit`, oldest rows first. */
export async function listSealedNotUnder(q: Queryable, keyId: Buffer, limit: number): Promise<SealedEntry[]> {
  const out: SealedEntry[] = [];
  for (const { table, label, prefix, owner, from } of SEALED_SLOTS) {
    if (out.length >= limit) break;
    const cols = slotColumns(prefix, 's.');
    const { rows } = await q.query<SealedRow & { id: string; label: string; tenant: string }>(
      `SELECT s.id::text AS id, s.${label} AS label, ${owner} AS tenant, ${cols.map((c, i) => `${c} AS ${SEALED_COLUMNS.split(', ')[i]}`).join(', ')}
         FROM ${fromOf(table, from)}
        WHERE ${cols[0]} <> $1 ORDER BY s.id LIMIT $2`,
      [keyId, limit - out.length],
    );
    for (const r of rows) out.push({ table, slot: prefix, id: r.id, label: r.label, tenant: r.tenant, sealed: toSealed(r) });
  }
  return out;
}

/**
 * Replaces a row's sealed secret with `after` only if it still holds `before` (a rotation or a delete
 * in between wins: false, nothing written). Whether the row was written.
 */
export async function replaceSealed(
  q: Queryable,
  entry: Pick<SealedEntry, 'table' | 'id' | 'slot'>,
  before: SealedSecret,
  after: SealedSecret,
): Promise<boolean> {
  const [keyCol, ivCol, tagCol, textCol] = slotColumns(entry.slot);
  const res = await q.query(
    `UPDATE ${entry.table} SET ${keyCol} = $2, ${ivCol} = $3, ${tagCol} = $4, ${textCol} = $5
      WHERE id = $1 AND ${keyCol} = $6 AND ${ivCol} = $7 AND ${textCol} = $8`,
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
  for (const { table, what, prefix, owner, from } of SEALED_SLOTS) {
    const keyCol = `s.${prefix}secret_key_id`;
    const { rows } = await q.query<{ key_id: string; count: string; tenants: string[] }>(
      `SELECT encode(${keyCol}, 'hex') AS key_id, count(*)::text AS count, array_agg(DISTINCT ${owner} ORDER BY ${owner}) AS tenants
         FROM ${fromOf(table, from)}
        WHERE ${keyCol} IS NOT NULL
        GROUP BY ${keyCol} ORDER BY count(*) DESC`,
    );
    for (const r of rows) out.push({ what, keyId: r.key_id, count: Number(r.count), tenants: r.tenants });
  }
  return out;
}
