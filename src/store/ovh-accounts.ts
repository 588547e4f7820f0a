/**
 * OVH accounts added at run time (migrations/0027, issue 44): one row per account (its endpoint, its
 * application key in clear, its application secret and consumer key sealed together, its rate, the
 * zones asked for, enabled or not), and which account each zone is in (zones.account, `default` for
 * the OVH_* variables'). Every change of an account sends NOTIFY dnsplane_account with its name in
 * the same transaction, so that every replica rebuilds (or drops) that account's client when it
 * commits (core/accounts/registry.ts).
 */
import { AlreadyExistsError, NotFoundError } from './errors.js';
import { PG_UNIQUE_VIOLATION, errorCode, type Queryable } from './internal.js';
import { ACCOUNT_CHANNEL, notifyZoneChanged } from './notify.js';
import { SEALED_COLUMNS, sealedParams, toSealed, type SealedRow, type SealedSecret } from './sealed.js';

/** The account of the OVH_* variables: never a row, every zone's account unless said otherwise. */
export const DEFAULT_ACCOUNT = 'default';

/** An account as listings show it: never its secrets. */
export interface OvhAccountRow {
  id: string;
  name: string;
  endpoint: string;
  applicationKey: string;
  /** Calls per second shared by the replicas; null: DNSPLANE_OVH_RATE. */
  rate: number | null;
  /** The zones asked for (--zones); null: every zone the account holds. */
  zones: string[] | null;
  enabled: boolean;
  createdAt: Date;
  rotatedAt: Date | null;
}

/** An account with its sealed credentials, for the client that calls OVH with them. */
export type OvhAccountWithSecret = OvhAccountRow & { sealed: SealedSecret };

interface Row extends SealedRow {
  id: string;
  name: string;
  endpoint: string;
  application_key: string;
  rate: number | null;
  zones: string[] | null;
  enabled: boolean;
  created_at: Date;
  rotated_at: Date | null;
}

const COLUMNS = `id::text AS id, name, endpoint, application_key, rate, zones, enabled, created_at, rotated_at`;

function toAccount(r: Row): OvhAccountRow {
  return {
    id: r.id,
    name: r.name,
    endpoint: r.endpoint,
    applicationKey: r.application_key,
    rate: r.rate,
    zones: r.zones,
    enabled: r.enabled,
    createdAt: r.created_at,
    rotatedAt: r.rotated_at,
  };
}

async function notifyAccount(q: Queryable, name: string): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [ACCOUNT_CHANNEL, name]);
}

export interface NewOvhAccount {
  name: string;
  endpoint: string;
  applicationKey: string;
  rate: number | null;
  zones: string[] | null;
}

/** AlreadyExistsError when the name is taken. Call inside the transaction that binds its zones. */
export async function insertOvhAccount(q: Queryable, a: NewOvhAccount, sealed: SealedSecret): Promise<OvhAccountRow> {
  try {
    const { rows } = await q.query<Row>(
      `INSERT INTO ovh_accounts (name, endpoint, application_key, rate, zones, ${SEALED_COLUMNS})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
      [a.name, a.endpoint, a.applicationKey, a.rate, a.zones, ...sealedParams(sealed)],
    );
    await notifyAccount(q, a.name);
    return toAccount(rows[0]!);
  } catch (e) {
    if (errorCode(e) === PG_UNIQUE_VIOLATION) throw new AlreadyExistsError('OVH account', a.name);
    throw e;
  }
}

export async function listOvhAccounts(q: Queryable): Promise<OvhAccountRow[]> {
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM ovh_accounts ORDER BY name`);
  return rows.map(toAccount);
}

/** One account with its sealed credentials; undefined when there is none of that name. */
export async function getOvhAccount(q: Queryable, name: string): Promise<OvhAccountWithSecret | undefined> {
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS}, ${SEALED_COLUMNS} FROM ovh_accounts WHERE name = $1`, [name]);
  return rows[0] ? { ...toAccount(rows[0]), sealed: toSealed(rows[0]) } : undefined;
}

/** Every account with its sealed credentials (a replica's start). */
export async function listOvhAccountsWithSecrets(q: Queryable): Promise<OvhAccountWithSecret[]> {
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS}, ${SEALED_COLUMNS} FROM ovh_accounts ORDER BY name`);
  return rows.map((r) => ({ ...toAccount(r), sealed: toSealed(r) }));
}

/** New credentials (the application key may change too). NotFoundError when there is no such account. */
export async function rotateOvhAccount(q: Queryable, name: string, applicationKey: string, sealed: SealedSecret): Promise<OvhAccountRow> {
  const { rows } = await q.query<Row>(
    `UPDATE ovh_accounts SET application_key = $2, (${SEALED_COLUMNS}) = ($3, $4, $5, $6), rotated_at = now()
      WHERE name = $1 RETURNING ${COLUMNS}`,
    [name, applicationKey, ...sealedParams(sealed)],
  );
  if (!rows[0]) throw new NotFoundError('OVH account', name);
  await notifyAccount(q, name);
  return toAccount(rows[0]);
}

export async function setOvhAccountEnabled(q: Queryable, name: string, enabled: boolean): Promise<OvhAccountRow> {
  const { rows } = await q.query<Row>(`UPDATE ovh_accounts SET enabled = $2 WHERE name = $1 RETURNING ${COLUMNS}`, [name, enabled]);
  if (!rows[0]) throw new NotFoundError('OVH account', name);
  await notifyAccount(q, name);
  return toAccount(rows[0]);
}

/** Removes the account; its zones go back to no account's (they are forgotten: see core/accounts/admin.ts). */
export async function deleteOvhAccount(q: Queryable, name: string): Promise<OvhAccountRow> {
  const { rows } = await q.query<Row>(`DELETE FROM ovh_accounts WHERE name = $1 RETURNING ${COLUMNS}`, [name]);
  if (!rows[0]) throw new NotFoundError('OVH account', name);
  await notifyAccount(q, name);
  return toAccount(rows[0]);
}

/** zone -> its account, for every zone that is not `default`'s. */
export async function zoneAccounts(q: Queryable): Promise<Map<string, string>> {
  const { rows } = await q.query<{ name: string; account: string }>(`SELECT name, account FROM zones WHERE account <> $1`, [DEFAULT_ACCOUNT]);
  return new Map(rows.map((r) => [r.name, r.account]));
}

/**
 * Registers the zones in `account`: new zones, and zones left by a removed account (their journal
 * stays theirs); each replica learns of a new zone by NOTIFY dnsplane_zone. A zone another account
 * (or `default`) holds is left as it is: the caller refused it before.
 */
export async function bindZonesToAccount(q: Queryable, account: string, names: string[]): Promise<void> {
  const unique = [...new Set(names)].sort();
  if (unique.length === 0) return;
  const { rows } = await q.query<{ name: string }>(
    `INSERT INTO zones AS z (name, account) SELECT n, $2 FROM unnest($1::text[]) AS n ORDER BY n
     ON CONFLICT (name) DO UPDATE SET account = EXCLUDED.account
      WHERE z.account <> $3 AND NOT EXISTS (SELECT 1 FROM ovh_accounts a WHERE a.name = z.account)
     RETURNING name, generation::text AS generation`,
    [unique, account, DEFAULT_ACCOUNT],
  );
  for (const r of rows) await notifyZoneChanged(q, r.name, 0n);
}

/** The zones among `names` held by an account that exists (`default` included), with that account. */
export async function heldZones(q: Queryable, names: string[]): Promise<Array<{ zone: string; account: string }>> {
  const { rows } = await q.query<{ name: string; account: string }>(
    `SELECT z.name, z.account FROM zones z WHERE z.name = ANY($1::text[])
        AND (z.account = $2 OR EXISTS (SELECT 1 FROM ovh_accounts a WHERE a.name = z.account)) ORDER BY z.name`,
    [names, DEFAULT_ACCOUNT],
  );
  return rows.map((r) => ({ zone: r.name, account: r.account }));
}

/** The zones of `account`. */
export async function zonesOfAccount(q: Queryable, account: string): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(`SELECT name FROM zones WHERE account = $1 ORDER BY name`, [account]);
  return rows.map((r) => r.name);
}
