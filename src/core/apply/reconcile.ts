/**
 * The touched names of an apply brought back to what they held before it, from what OVH shows now:
 * read those names (never the whole zone), send what undoes whatever of the apply's operations OVH
 * shows done (undo.ts compensate), and write the result into the cache. The live rollback of an apply
 * (rollback.ts: for its failed operation, whose answer may have been lost) and the recovery of a dead
 * one (recovery.ts) both end here, through the fenced client their caller hands over.
 */
import type { OvhApi } from '../../ovh/client.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import { describeOperation } from '../../ovh/ops.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { readRecords } from '../zones/read-records.js';
import { toRow } from '../zones/zones.js';
import { nameKey, send, type TouchedName } from './ops.js';
import type { CallRecord } from './result.js';
import { compensate, rowAfter } from './undo.js';

/**
 * What OVH holds now for these names: per name one filtered read (readRecords with
 * `?fieldType=&subDomain=`: the records themselves in OVH's expanded mode, else the ids and one GET per
 * id, in order). OVH's subDomain filter is loose (case-insensitive `ilike`; an empty one, for the apex,
 * may match every name): ids the cache holds under another name are not fetched, and only records of
 * the names asked for are returned. Never the whole zone, one GET at a time.
 */
export async function readNames(ctx: CoreContext, ovh: OvhApi, tx: store.Queryable, zone: string, names: readonly TouchedName[]): Promise<OvhRecord[]> {
  const wanted = new Set(names.map(nameKey));
  const cachedUnder = new Map((await store.listRecords(tx, zone)).map((r) => [r.id, nameKey(r)]));
  const seen = new Set<string>();
  const out: OvhRecord[] = [];
  const elsewhere = (id: string) => seen.has(id) || (cachedUnder.has(id) && !wanted.has(cachedUnder.get(id)!));
  for (const n of names) {
    const { records } = await readRecords(ctx, ovh, zone, { fieldType: n.fieldType, subDomain: n.subDomain }, { concurrency: 1, skip: elsewhere });
    for (const r of records) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      if (wanted.has(nameKey(r))) out.push(r);
    }
  }
  return out;
}

/** The apply to bring back: its operations, the cached records of its names before it, and those names. */
export interface ToReconcile {
  ops: readonly OvhOperation[];
  before: readonly store.RecordRow[];
  names: TouchedName[];
}

/**
 * Reads what OVH holds for the apply's names (unless given as `now`), sends the compensating
 * operations, and writes the result into the cache for those names. `knownIds` (the ids a lost POST's
 * look-up must not take for its record) learns every id read or created. Returns the calls sent.
 */
export async function reconcileNames(
  ctx: CoreContext,
  ovh: OvhApi,
  tx: store.Queryable,
  zone: string,
  apply: ToReconcile,
  knownIds: Set<string>,
  now?: OvhRecord[],
): Promise<CallRecord[]> {
  const current = now ?? (await readNames(ctx, ovh, tx, zone, apply.names));
  for (const r of current) knownIds.add(r.id);
  const rows = new Map(current.map((r) => [r.id, toRow(r)]));
  const sent: CallRecord[] = [];
  for (const op of compensate(zone, apply.ops, apply.before, current)) {
    const created = await send(ovh, zone, op, knownIds);
    sent.push({ ...describeOperation(op), status: 200 });
    if (created) knownIds.add(created.id);
    const row = rowAfter({ op, created });
    if (row) rows.set(row.id, row);
    else if (op.method === 'DELETE') rows.delete(op.id);
  }
  await store.replaceRecordsForNames(tx, zone, apply.names, [...rows.values()]);
  return sent;
}
