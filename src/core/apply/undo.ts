/**
 * Undo, in one place, so that what is written and what is read back cannot drift apart:
 * - the journal intent: what a live apply writes before its first OVH call (intentFor, writeIntent)
 *   and what the recovery of an apply that died reads back (readIntent, stageOf);
 * - the one builder of the operation that undoes another (undoOf), used by the live rollback of an
 *   apply (rollback.ts) and, through compensate, by every rollback that starts from what OVH shows
 *   now (reconcile.ts: the failed operation of a live apply, and recovery.ts);
 * - what an operation that succeeded leaves in OVH and in the cache (recordAfter, rowAfter).
 */
import { describeOperation, recordPath } from '../../ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { ApprovalNote } from '../plan/approvals.js';
import type { CoreContext } from '../context.js';
import type { ZoneFence } from '../zones/fence.js';
import { toRow } from '../zones/zones.js';
import { answered, journalPool, sendable, type Done, type TouchedName } from './ops.js';

// --- the journal intent ---

/**
 * What the journal's intent holds (JSON). `operations` is for people (method, path, body as sent);
 * `ops` (with each record's state before) and `before` (the cached records of the touched names) are
 * what recovery needs to roll a dead apply back.
 */
export interface Intent {
  /** Set for a request applied in batches (DNSPLANE_APPLY_BATCH): which batch this row is, from 1. */
  batch?: number;
  /** Which door and credential asked (RoutedInput.origin), for people: the journal entry's summary. */
  summary?: string;
  /** The client address the request came from (RoutedInput.from). */
  from?: string;
  /** The OVH account the zone's calls went through when the apply ran (issue 44: a zone can move accounts). */
  account?: string;
  operations: Array<ReturnType<typeof describeOperation>>;
  ops: OvhOperation[];
  names: TouchedName[];
  before: store.RecordRow[];
  /** A stored plan applied over the change threshold by a second admin's approval (core/plan/approvals.ts). */
  approval?: ApprovalNote;
  /** A stored revert's apply (core/apply/revert.ts): the journal row it reverts. */
  revertOf?: string;
}

/** The intent of an apply about to send `ops`: `before` is the cache's records of the touched names, read in `tx`. */
export async function intentFor(
  tx: store.Queryable,
  zone: string,
  what: {
    ops: OvhOperation[];
    names: TouchedName[];
    batch: number | undefined;
    summary?: string;
    from?: string | undefined;
    account?: string | undefined;
    approval?: ApprovalNote | undefined;
    revertOf?: string | undefined;
  },
): Promise<Intent> {
  const { ops, names, batch, summary, from, account, approval, revertOf } = what;
  return {
    operations: ops.map(describeOperation),
    ops,
    names,
    before: await store.listRecordsForNames(tx, zone, names),
    ...(batch !== undefined ? { batch } : {}),
    ...(summary ? { summary } : {}),
    ...(from ? { from } : {}),
    ...(account ? { account } : {}),
    ...(approval ? { approval } : {}),
    ...(revertOf ? { revertOf } : {}),
  };
}

/**
 * Writes the intent in flight before the first OVH call, on the journal's own autocommitted
 * connection: it survives a crash of this process and of the lock's transaction, and tells the next
 * holder of the lock what to roll back. Fenced: written only while `fence`'s session holds the zone
 * lock (ZoneLockLostError otherwise). Returns the journal row's id.
 */
export async function writeIntent(
  ctx: CoreContext,
  fence: ZoneFence,
  row: { zone: string; tenantId: string; planId?: string; intent: Intent },
): Promise<string> {
  return store.insertIntent(journalPool(ctx), { ...row, fence: fence.journalFence() });
}

/** An intent read back from the journal, checked. */
export interface ReadIntent {
  names: TouchedName[];
  /** Absent when the intent has no operations (written before rollback existed) or a malformed one: then the names are only re-read. */
  ops?: OvhOperation[];
  before: store.RecordRow[];
}

/** The journal intent, checked: a malformed one is recovered as "re-read these names" only. */
export function readIntent(v: unknown): ReadIntent {
  const o = isObject(v) ? v : {};
  const names = (Array.isArray(o['names']) ? o['names'] : [])
    .filter(isObject)
    .filter((n): n is Record<string, string> => typeof n['subDomain'] === 'string' && typeof n['fieldType'] === 'string')
    .map((n) => ({ subDomain: n['subDomain']!, fieldType: n['fieldType']! }));
  const before = (Array.isArray(o['before']) ? o['before'] : []).filter((r): r is store.RecordRow => isRecord(r) && typeof r['id'] === 'string');
  const ops = Array.isArray(o['ops']) && Array.isArray(o['before']) ? o['ops'].filter(isOperation) : undefined;
  return { names, before, ...(ops && ops.length === (o['ops'] as unknown[]).length ? { ops } : {}) };
}

/** The stage an in-flight row's holder noted last (`refresh`: its refresh may have gone out), from the row's result. */
export function stageOf(result: unknown): unknown {
  return isObject(result) ? result['stage'] : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isRecord(r: unknown): r is Record<string, unknown> {
  return (
    isObject(r) && typeof r['subDomain'] === 'string' && typeof r['fieldType'] === 'string' && typeof r['target'] === 'string' && typeof r['ttl'] === 'number'
  );
}

function isOperation(v: unknown): v is OvhOperation {
  if (!isObject(v) || typeof v['path'] !== 'string') return false;
  switch (v['method']) {
    case 'POST':
      return isRecord(v['body']);
    case 'PUT':
      return typeof v['id'] === 'string' && isObject(v['body']) && isRecord(v['before']);
    case 'DELETE':
      return typeof v['id'] === 'string' && isRecord(v['before']);
    default:
      return false;
  }
}

// --- the undo builder ---

/**
 * The operation that undoes `op`, given `now`, the record `op` left in OVH: a creation's record is
 * deleted; an updated record (as it is now) gets its old target and TTL back; a deleted record is
 * created again (no `now`).
 */
export function undoOf(zone: string, op: OvhOperation, now: OvhRecord | undefined): OvhOperation {
  switch (op.method) {
    case 'POST': {
      if (!now) throw new Error(`internal: undoing ${op.method} ${op.path} needs the record it created`);
      return { method: 'DELETE', path: recordPath(zone, now.id), id: now.id, before: now };
    }
    case 'PUT': {
      if (!now) throw new Error(`internal: undoing ${op.method} ${op.path} needs the record as it is now`);
      return { method: 'PUT', path: op.path, id: op.id, body: { target: sendable(op.before.fieldType, op.before.target), ttl: op.before.ttl }, before: now };
    }
    case 'DELETE': {
      const gone = op.before;
      return {
        method: 'POST',
        path: recordPath(zone),
        body: { fieldType: gone.fieldType, subDomain: gone.subDomain, target: sendable(gone.fieldType, gone.target), ttl: gone.ttl },
      };
    }
  }
}

/**
 * The operations that take the touched names from what OVH holds now back to what they held before
 * an apply (its `ops`, the cached records `before` it), touching only what that apply could have done:
 * - a record it updated (PUT) that no longer holds its old value gets it back (PUT);
 * - a record it deleted that is gone is created again — unless a record of the same name, type and
 *   target that was not there before exists (an undo that was under way already re-created it);
 * - a record that was not there before and holds the target of one of its creations is deleted (one
 *   per creation). Records of those names made by someone else are left alone.
 * Ordered DELETE, PUT, POST, like every apply.
 */
export function compensate(zone: string, ops: readonly OvhOperation[], before: readonly store.RecordRow[], now: readonly OvhRecord[]): OvhOperation[] {
  const beforeIds = new Set(before.map((r) => r.id));
  const nowById = new Map(now.map((r) => [r.id, r]));
  const unknown = now.filter((r) => !beforeIds.has(r.id));
  const take = (match: (r: OvhRecord) => boolean): OvhRecord | undefined => {
    const i = unknown.findIndex(match);
    return i < 0 ? undefined : unknown.splice(i, 1)[0];
  };
  const same = (a: { subDomain: string; fieldType: string; target: string }, b: { subDomain: string; fieldType: string; target: string }) =>
    a.subDomain.toLowerCase() === b.subDomain.toLowerCase() &&
    a.fieldType === b.fieldType &&
    sendable(a.fieldType, a.target).toLowerCase() === sendable(b.fieldType, b.target).toLowerCase();

  const deletes: OvhOperation[] = [];
  const puts: OvhOperation[] = [];
  const posts: OvhOperation[] = [];
  for (const op of ops) {
    if (op.method === 'DELETE' && !nowById.has(op.id)) {
      if (take((r) => same(r, op.before))) continue;
      posts.push(undoOf(zone, op, undefined));
    }
  }
  for (const op of ops) {
    if (op.method === 'PUT') {
      const current = nowById.get(op.id);
      if (current && (!same(current, op.before) || current.ttl !== op.before.ttl)) puts.push(undoOf(zone, op, current));
    } else if (op.method === 'POST') {
      const made = take((r) => same(r, op.body));
      if (made) deletes.push(undoOf(zone, op, made));
    }
  }
  return [...deletes, ...puts, ...posts];
}

// --- what an operation leaves ---

/** The record an operation that succeeded left in OVH, as a GET answers it; none for a deletion. */
export function recordAfter(done: Done): OvhRecord | undefined {
  const { op } = done;
  switch (op.method) {
    case 'POST':
      return done.created;
    case 'PUT':
      return { ...op.before, target: answered(op.before.fieldType, op.body.target), ttl: op.body.ttl };
    case 'DELETE':
      return undefined;
  }
}

/** The cache row an operation that succeeded leaves; none for a deletion (its id leaves the cache). */
export function rowAfter(done: Done): store.RecordRow | undefined {
  const record = recordAfter(done);
  return record && toRow(record);
}
