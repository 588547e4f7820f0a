/**
 * The records cache: one row per OVH record. Nothing here bumps the zone generation; callers do
 * that (bumpGeneration) in the same transaction.
 */
import { NotFoundError } from './errors.js';
import { assertIdString, inTransaction, PG_FOREIGN_KEY_VIOLATION, errorCode, queryInPages, type Queryable } from './internal.js';
import { intern } from './intern.js';

/** One cached OVH record; structurally src/ovh/types.ts OvhRecord without `zone`. */
export interface RecordRow {
  /** OVH record id (exceeds 2^32), decimal string. */
  id: string;
  /** Relative to the zone; '' is the apex. */
  subDomain: string;
  fieldType: string;
  target: string;
  ttl: number;
}

/** A (subDomain, fieldType) pair: one record set of the zone. */
export interface RecordName {
  subDomain: string;
  fieldType: string;
}

interface Row {
  id: string;
  sub_domain: string;
  field_type: string;
  target: string;
  ttl: number;
}

const COLUMNS = 'id::text AS id, sub_domain, field_type, target, ttl';
const ORDER = 'ORDER BY sub_domain, field_type, id';

function toRecord(r: Row): RecordRow {
  return { id: r.id, subDomain: r.sub_domain, fieldType: intern(r.field_type), target: r.target, ttl: r.ttl };
}

function columns(rows: RecordRow[]): [string[], string[], string[], string[], number[]] {
  for (const r of rows) {
    assertIdString('record id', r.id);
    if (!Number.isInteger(r.ttl) || r.ttl < 0 || r.ttl > 2147483647) throw new TypeError(`record ${r.id}: bad ttl ${r.ttl}`);
  }
  return [rows.map((r) => r.id), rows.map((r) => r.subDomain), rows.map((r) => r.fieldType), rows.map((r) => r.target), rows.map((r) => r.ttl)];
}

/** Last row wins for a repeated id (ON CONFLICT cannot touch one row twice in a statement). */
function dedupeById(rows: RecordRow[]): RecordRow[] {
  return [...new Map(rows.map((r) => [r.id, r])).values()];
}

function zoneMissing(err: unknown, zone: string): unknown {
  return errorCode(err) === PG_FOREIGN_KEY_VIOLATION ? new NotFoundError('zone', zone) : err;
}

const INSERT_UNNEST = `
  INSERT INTO records (zone, id, sub_domain, field_type, target, ttl)
  SELECT $1, u.id, u.sub_domain, u.field_type, u.target, u.ttl
    FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::int[]) AS u(id, sub_domain, field_type, target, ttl)`;

const UPSERT_TAIL = `
  ON CONFLICT (zone, id) DO UPDATE
     SET sub_domain = EXCLUDED.sub_domain, field_type = EXCLUDED.field_type, target = EXCLUDED.target, ttl = EXCLUDED.ttl`;

/**
 * Rows of the records cache this process read (listRecords; listRecordsForNames and listRecordsByIds,
 * `named`), since it started:
 * what the tests of the apply path count to show that an apply reads what it touches, not the zone.
 */
export const recordRowsRead = { whole: 0, named: 0 };

/** Every cached record of the zone, by (subDomain, fieldType, id). */
export async function listRecords(q: Queryable, zone: string): Promise<RecordRow[]> {
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM records WHERE zone = $1 ${ORDER}`, [zone]);
  recordRowsRead.whole += rows.length;
  return rows.map(toRecord);
}

/**
 * listRecords a page at a time (store/internal.ts queryInPages: through a cursor in a transaction),
 * each page awaited before the next is read: 50,000 records are never parsed or mapped in one block.
 */
export async function listRecordsInPages(q: Queryable, zone: string, page: (rows: RecordRow[]) => void | Promise<void>): Promise<void> {
  await queryInPages<Row>(q, `SELECT ${COLUMNS} FROM records WHERE zone = $1 ${ORDER}`, [zone], (rows) => {
    recordRowsRead.whole += rows.length;
    return page(rows.map(toRecord));
  });
}

/** How many records the zone's cache holds (what a whole read of it will bring). */
export async function countZoneRecords(q: Queryable, zone: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM records WHERE zone = $1', [zone]);
  return rows[0]?.n ?? 0;
}

/** The cached records of the given record sets. */
export async function listRecordsForNames(q: Queryable, zone: string, names: RecordName[]): Promise<RecordRow[]> {
  if (names.length === 0) return [];
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM records
      WHERE zone = $1
        AND (sub_domain, field_type) IN (SELECT * FROM unnest($2::text[], $3::text[]))
      ${ORDER}`,
    [zone, names.map((n) => n.subDomain), names.map((n) => n.fieldType)],
  );
  recordRowsRead.named += rows.length;
  return rows.map(toRecord);
}

/**
 * The cached records at these names (subDomains, lowercase; every type): what one record set of an
 * admin's assignment is read from, instead of the zone. OVH keeps a subDomain as it was written, in
 * any case: compared lowercased (a scan of the zone's rows in Postgres, none sent).
 */
export async function listRecordsAtSubDomains(q: Queryable, zone: string, subDomains: readonly string[]): Promise<RecordRow[]> {
  if (subDomains.length === 0) return [];
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM records WHERE zone = $1 AND lower(sub_domain) = ANY($2::text[]) ${ORDER}`, [zone, subDomains]);
  recordRowsRead.named += rows.length;
  return rows.map(toRecord);
}

/** The cached records of these ids that exist (a record not returned is not in the cache). */
export async function listRecordsByIds(q: Queryable, zone: string, ids: readonly string[]): Promise<RecordRow[]> {
  if (ids.length === 0) return [];
  for (const id of ids) assertIdString('record id', id);
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM records WHERE zone = $1 AND id = ANY($2::bigint[]) ${ORDER}`, [zone, ids]);
  recordRowsRead.named += rows.length;
  return rows.map(toRecord);
}

/**
 * Rows written per INSERT of a whole zone: the statement's parameters are serialized on the event
 * loop in one go (pg's array text), about 1 ms per 1,000 rows on an idle machine; 50,000 rows in one
 * statement held the process ~60 ms, and 2,000 up to 46 ms when twenty zones were synced at once on two
 * busy cores (bench/estate's cold start, a CPU profile of its late timers). 500 a statement: 100 round
 * trips for 50,000 rows, each a few ms at most.
 */
export const ROWS_PER_INSERT = 500;

/**
 * Replaces the zone's whole cache (after a full sync): one DELETE, then INSERTs of ROWS_PER_INSERT
 * rows each, each batch's rows checked before it is written (a bad row throws, and the transaction
 * takes none of it). Given a Pool it runs its own transaction; given a client, the caller's
 * transaction.
 */
export async function replaceZoneRecords(q: Queryable, zone: string, rows: RecordRow[]): Promise<{ deleted: number; inserted: number }> {
  return inTransaction(q, async (tx) => {
    const del = await tx.query('DELETE FROM records WHERE zone = $1', [zone]);
    let inserted = 0;
    try {
      for (let at = 0; at < rows.length; at += ROWS_PER_INSERT) {
        const ins = await tx.query(INSERT_UNNEST, [zone, ...columns(rows.slice(at, at + ROWS_PER_INSERT))]);
        inserted += ins.rowCount ?? 0;
      }
      return { deleted: del.rowCount ?? 0, inserted };
    } catch (err) {
      throw zoneMissing(err, zone);
    }
  });
}

/**
 * Replaces the cached records of some record sets (after re-reading them from OVH): deletes the
 * rows of `names`, then upserts `rows` (an id the cache holds under another name is moved: OVH can
 * change a record's subDomain in place).
 */
export async function replaceRecordsForNames(
  q: Queryable,
  zone: string,
  names: RecordName[],
  rows: RecordRow[],
): Promise<{ deleted: number; upserted: number }> {
  const unique = dedupeById(rows);
  const cols = columns(unique);
  return inTransaction(q, async (tx) => {
    let deleted = 0;
    if (names.length > 0) {
      const del = await tx.query(
        `DELETE FROM records
          WHERE zone = $1 AND (sub_domain, field_type) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
        [zone, names.map((n) => n.subDomain), names.map((n) => n.fieldType)],
      );
      deleted = del.rowCount ?? 0;
    }
    if (unique.length === 0) return { deleted, upserted: 0 };
    try {
      const ins = await tx.query(INSERT_UNNEST + UPSERT_TAIL, [zone, ...cols]);
      return { deleted, upserted: ins.rowCount ?? 0 };
    } catch (err) {
      throw zoneMissing(err, zone);
    }
  });
}

/** Inserts or updates rows by (zone, id). Returns the number of rows written. */
export async function upsertRecords(q: Queryable, zone: string, rows: RecordRow[]): Promise<number> {
  const unique = dedupeById(rows);
  if (unique.length === 0) return 0;
  try {
    const { rowCount } = await q.query(INSERT_UNNEST + UPSERT_TAIL, [zone, ...columns(unique)]);
    return rowCount ?? 0;
  } catch (err) {
    throw zoneMissing(err, zone);
  }
}

/** Deletes rows by id. Returns the number deleted. */
export async function deleteRecords(q: Queryable, zone: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  for (const id of ids) assertIdString('record id', id);
  const { rowCount } = await q.query('DELETE FROM records WHERE zone = $1 AND id = ANY($2::bigint[])', [zone, ids]);
  return rowCount ?? 0;
}
