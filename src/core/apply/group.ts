/**
 * The group: the applies of one zone that the holder of its lock publishes with one refresh
 * (coalescing, DNSPLANE_APPLY_COALESCE; a lone apply is a group of one). What a member is and what it
 * answers, what the group keeps while it runs, which waiting apply may join it (the bounds, and
 * record sets disjoint from what the group sent), and the savepoint the group goes back to when its
 * refresh fails. The holder's loop is holder.ts; this is the model it and its steps share.
 */
import type pg from 'pg';
import type { OvhApi } from '../../ovh/client.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import type { ZoneFence } from '../zones/fence.js';
import type { ZonePlan } from '../plan/plan.js';
import type { RoutedInput } from '../plan/input.js';
import type { Tenant } from '../tenants/tenants.js';
import type { ZoneMemory } from '../reads/zone-memory.js';
import type { PlanRest } from './batch-plan.js';
import { nameKey, type Done, type TouchedName } from './ops.js';
import type { CallRecord, ZoneApplyResult } from './result.js';

/** One batch of one request, for one zone: what a member of a group applies. */
export interface ZoneBatch {
  tenant: Tenant;
  zone: string;
  routed: RoutedInput;
  /** The stored plan being applied (its request's first batch only: the later ones re-plan the request). */
  stored?: ZonePlan;
  /** Which batch of its request, from 1. */
  index: number;
  /** DNSPLANE_APPLY_BATCH: the most operations of a batch, and of a group; 0: no bound. */
  max: number;
  /** The rest of its request's plan after its previous batch (batches after the first). */
  carried?: PlanRest;
}

/** What one batch answers: its result, and whether its request plans more (then `rest`, when it was applied). */
export interface BatchAnswer {
  result: ZoneApplyResult;
  more: boolean;
  /** Applied with more to do: the plan of the rest (this batch's changes and operations taken out). */
  rest?: ZonePlan;
}

export type Outcome = { step: BatchAnswer } | { error: unknown };

/**
 * One apply of a zone waiting for (or holding) the zone lock in this process, and where its answer
 * goes when the lock's holder takes it into its group.
 */
export interface Member extends ZoneBatch {
  /** When it began waiting for the zone lock (metrics: the wait ends when it gets the lock or a holder takes it). */
  waitingSince: number;
  /** What it answers, once the group decided. */
  outcome?: Outcome;
  /** Resolves with its answer when a holder took it over, once the holder's transaction has ended. */
  answer: Promise<Outcome>;
  answered: (o: Outcome) => void;
}

/** A member planned under the lock with operations to send: its batch of its request. */
export interface ToSend {
  /** What it sends (its request's batch). */
  plan: ZonePlan;
  more: boolean;
  rest: ZonePlan;
  names: TouchedName[];
}

/** A member that sent its operations and recorded them in the transaction; published by the group's refresh. */
export interface Sent extends ToSend {
  member: Member;
  journalId: string;
  calls: CallRecord[];
  done: Done[];
  before: store.RecordRow[];
  generation: bigint;
}

/**
 * What a member rolled back alone wrote into the transaction (rollback.ts), kept to write it again
 * when the group's refresh fails and the transaction goes back to before the group.
 */
export interface RollbackRecord {
  journalId: string;
  /** The names it re-read, and the cache rows they held then. */
  names: TouchedName[];
  rows: store.RecordRow[];
  /** The journal's `failed` result; absent when its refresh may have published (the row stays in flight). */
  failed?: Record<string, unknown>;
}

/** A member whose operation failed, rolled back alone inside the group. */
export interface RolledBack {
  result: ZoneApplyResult;
  record: RollbackRecord;
}

/** The zone lock its holder works under: the lock's transaction and its fence. */
export interface HeldLock {
  zone: string;
  tx: pg.PoolClient;
  fence: ZoneFence;
  /** The holder's OVH client: the fence's (every write fenced), its calls in the first member's share of the rate. */
  ovh: OvhApi;
}

export interface Group extends HeldLock {
  /** When the holder began (after recovery): the group takes no apply once it has run DNSPLANE_APPLY_COALESCE. */
  started: number;
  /** The first member's DNSPLANE_APPLY_BATCH: the most operations one refresh of the group publishes. */
  max: number;
  /** The zone's generation when the group began: what a stored plan's base generation is compared with. */
  base?: bigint;
  /** Record ids the cache holds under the names the group's members touch, and those they created (a lost POST is looked for among the others). */
  knownIds: Set<string>;
  /** When its first operation was sent (shutdown: the time an undo of everything sent would take). */
  sendingSince?: number;
  /** Operations sent by the members that succeeded (the refresh publishes them). */
  ops: number;
  /** The names ("sub type") every member that sent something touched: a later apply touching one waits for the next group. */
  names: Set<string>;
  sent: Sent[];
  failed: RolledBack[];
  /** GROUP_SAVEPOINT was taken (before the group's first write). */
  savepoint: boolean;
  /**
   * The zone's view its members are planned on (core/reads/zone-memory.ts), once one was: what each member
   * writes into the transaction is written into it too; dropped unless the transaction commits.
   */
  memory?: ZoneMemory;
}

export function newGroup(held: HeldLock, max: number): Group {
  return { ...held, started: performance.now(), max, knownIds: new Set(), ops: 0, names: new Set(), sent: [], failed: [], savepoint: false };
}

/** Inside the zone lock's transaction: what the group's recorded changes are undone to when its refresh fails. */
export const GROUP_SAVEPOINT = 'coalesced_group';

/** Takes GROUP_SAVEPOINT before the group's first write. */
export async function openGroup(group: Group): Promise<void> {
  if (group.savepoint) return;
  await store.savepoint(group.tx, GROUP_SAVEPOINT);
  group.savepoint = true;
}

/**
 * Whether the group may take another waiting apply at all: not once shutdown began or the lock was
 * lost, not once it has run DNSPLANE_APPLY_COALESCE, not once it holds DNSPLANE_APPLY_BATCH operations.
 */
export function mayTakeMore(ctx: CoreContext, group: Group): boolean {
  if (ctx.lifecycle?.stopping || group.fence.lost) return false;
  if (performance.now() - group.started >= (ctx.settings.applyCoalesceMs ?? 0)) return false;
  return !(group.max > 0 && group.ops >= group.max);
}

/**
 * Whether a waiting apply, planned, joins the group: none of its record sets (name, type) is one an
 * earlier member sent something for, and its operations keep the group within DNSPLANE_APPLY_BATCH.
 * Otherwise it stays first in the queue and begins the next group. The members of a group therefore
 * touch disjoint record sets, and each one's undo is independent of the others'.
 */
export function joins(group: Group, toSend: ToSend): boolean {
  if (toSend.names.some((n) => group.names.has(nameKey(n)))) return false;
  return !(group.max > 0 && group.ops + toSend.plan.operations.length > group.max);
}
