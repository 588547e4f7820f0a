/**
 * A plan stored (core/plan/plan.ts computes it): computed and written with its digest in slices, read
 * back for its tenant, its digest over its canonical JSON (core/plan/canonical-json.ts), what a listing
 * shows of it (planCounts). Apply (core/apply/index.ts) applies a stored plan after these checks.
 */
import { createHash, randomUUID } from 'node:crypto';
import { InvalidInputError } from '../../dns/errors.js';
import type { Policy } from '../../dns/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError, PermissionDeniedError } from '../errors.js';
import { Slicer, stringifySliced } from '../slices.js';
import { isAdmin, type Tenant } from '../tenants/tenants.js';
import { ensureSynced } from '../zones/zones.js';
import { readCacheOf } from '../reads/read-cache.js';
import { canonicalJson } from './canonical-json.js';
import { computeZonePlan, type StoredPlan, type ZonePlan } from './plan.js';
import { routeInput, type PlanInput } from './input.js';

/**
 * Computes and stores a plan: linear in the request and the zones' records, cut into slices that
 * yield to the event loop (core/slices.ts). At most DNSPLANE_PLAN_CONCURRENCY Plans per tenant at once
 * (ctx.planLimiter): one more is refused with ResourceExhaustedError.
 */
export async function plan(ctx: CoreContext, tenant: Tenant, input: PlanInput, requestedBy: Tenant = tenant, alsoWrite?: AlsoWrite): Promise<StoredPlan> {
  const started = performance.now();
  const run = () => computeAndStore(ctx, tenant, input, requestedBy, alsoWrite);
  const p = ctx.planLimiter ? await ctx.planLimiter.run(tenant, run) : await run();
  ctx.metrics?.planDone((performance.now() - started) / 1000);
  return p;
}

/** What to write in the transaction that stores the plan (core/apply/revert.ts: its journal row). */
export type AlsoWrite = (tx: store.Queryable, p: StoredPlan) => Promise<void>;

async function computeAndStore(ctx: CoreContext, tenant: Tenant, input: PlanInput, requestedBy: Tenant, alsoWrite?: AlsoWrite): Promise<StoredPlan> {
  if (input.kind === 'draft') throw new InvalidInputError('input', 'a draft of the served OVH API is applied by its refresh, never stored as a plan');
  const slicer = new Slicer();
  const routed = await routeInput(ctx, tenant, input, slicer);
  const zones: ZonePlan[] = [];
  const reads = readCacheOf(ctx);
  for (const zone of [...routed.byZone.keys()].sort()) {
    await ensureSynced(ctx, zone);
    zones.push(await store.withSnapshot(ctx.pool, (q) => computeZonePlan(ctx, q, tenant, zone, routed, slicer, reads)));
  }
  const { digest, body } = await serializePlan(zones, slicer);
  await slicer.yield();
  const now = new Date();
  const p: StoredPlan = {
    id: `pl_${randomUUID().replace(/-/g, '')}`,
    tenant: tenant.name,
    tenantId: tenant.id,
    policy: input.policy,
    zones,
    digest,
    createdAt: now,
    expiresAt: new Date(now.getTime() + ctx.settings.planTtlMs),
    status: 'pending',
    input,
  };
  const row = {
    id: p.id,
    tenantId: tenant.id,
    requestedBy: requestedBy.id,
    policy: p.policy,
    request: new store.JsonText(await stringifySliced(input, slicer)),
    body: new store.JsonText(body),
    digest: p.digest,
    baseGenerations: Object.fromEntries(zones.map((z) => [z.zone, z.baseGeneration.toString()])),
    expiresAt: p.expiresAt,
    counts: planCounts(zones),
  };
  if (!alsoWrite) await store.insertPlan(ctx.pool, row);
  else {
    await store.withTransaction(ctx.pool, async (tx) => {
      await store.insertPlan(tx, row);
      await alsoWrite(tx, p);
    });
  }
  return p;
}

/**
 * The first zone of a stored plan whose plan, computed now as its tenant, is not the stored one: what
 * the plan touches changed since it was made (the record sets at its names, their ownership and
 * withdrawn targets, the sets its tenant owns), with the zone's generation now; undefined when every
 * zone's is the same. Apply judges the same under the zone lock (core/apply/prepare.ts); this judges
 * without it, for a plan about to be approved (core/plan/approvals.ts). A change elsewhere in the zone
 * does not count.
 */
export async function changedSince(ctx: CoreContext, tenant: Tenant, p: StoredPlan): Promise<{ zone: string; generation: bigint } | undefined> {
  const slicer = new Slicer();
  const routed = await routeInput(ctx, tenant, p.input, slicer);
  const reads = readCacheOf(ctx);
  for (const stored of p.zones) {
    const now = await store.withSnapshot(ctx.pool, (q) => computeZonePlan(ctx, q, tenant, stored.zone, routed, slicer, reads));
    if (!(await samePlan(now, stored, slicer))) return { zone: stored.zone, generation: now.baseGeneration };
  }
  return undefined;
}

/**
 * Whether a zone's plan computed now is the stored one: their digests, the base generation left out
 * (the zone may have moved elsewhere). In slices: a stored plan may hold thousands of changes
 * (megabytes of canonical JSON).
 */
export async function samePlan(now: ZonePlan, stored: ZonePlan, slicer: Slicer): Promise<boolean> {
  return (await planDigestSliced([{ ...now, baseGeneration: stored.baseGeneration }], slicer)) === (await planDigestSliced([stored], slicer));
}

/** Why a plan is stale, for its error: what it touches in `zone` changed between the two generations. */
export function staleWhy(zone: string, made: bigint, now: bigint): string {
  return `the record sets or ownership the plan touches in zone ${zone} changed since it was made (generation ${made} -> ${now})`;
}

/** What a listing of plans shows of one (store.PlanCounts): its zones, changes, conflicts, OVH calls. */
export function planCounts(zones: readonly ZonePlan[]): store.PlanCounts {
  return {
    zones: zones.map((z) => z.zone),
    changeCount: zones.reduce((n, z) => n + z.changes.length, 0),
    conflictCount: zones.reduce((n, z) => n + z.conflicts.length, 0),
    // A zone with operations ends with its refresh.
    operationCount: zones.reduce((n, z) => n + (z.operations.length > 0 ? z.operations.length + 1 : 0), 0),
  };
}

export async function getPlan(ctx: CoreContext, tenant: Tenant, id: string): Promise<StoredPlan> {
  return (await getPlanWithRow(ctx, tenant, id)).plan;
}

/** getPlan, with the row it was read from (what an admin's view of the plan also shows). */
export async function getPlanWithRow(ctx: CoreContext, tenant: Tenant, id: string): Promise<{ plan: StoredPlan; row: store.Plan }> {
  const row = await store.getPlan(ctx.pool, id);
  if (!row) throw new NotFoundError('plan', id, `plan "${id}" does not exist`);
  if (row.tenantId !== tenant.id && !isAdmin(tenant)) throw new PermissionDeniedError('planId', `plan "${id}" belongs to another tenant`);
  const owner = await store.getTenantById(ctx.pool, row.tenantId);
  const plan: StoredPlan = {
    id: row.id,
    tenant: owner?.name ?? '',
    tenantId: row.tenantId,
    policy: row.policy as Policy,
    zones: fromJson(row.body),
    digest: row.digest,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    status: row.status,
    input: row.request as unknown as PlanInput,
  };
  return { plan, row };
}

/**
 * A plan's digest — sha-256 over the canonical JSON of its zone plans, keys sorted so that a plan
 * whose objects were built or stored in another key order (jsonb, before migration 0008, kept none)
 * digests the same, thresholds left out — and its body as stored (the zone plans in canonical JSON,
 * threshold included), written once, in slices that yield to the event loop: a
 * 5,000-change plan is megabytes of JSON, and the digest and the body share every change's text.
 * The digest leaves the threshold out (a judgement on the plan, not its content): the body is the
 * digest's text with the threshold's member.
 */
export async function serializePlan(zones: ZonePlan[], slicer: Slicer): Promise<{ digest: string; body: string }> {
  return writePlan(zones, slicer, true);
}

/** serializePlan's digest alone (an Apply compares a stored plan of thousands of changes with its own). */
export async function planDigestSliced(zones: ZonePlan[], slicer: Slicer): Promise<string> {
  return (await writePlan(zones, slicer, false)).digest;
}

async function writePlan(zones: ZonePlan[], slicer: Slicer, withBody: boolean): Promise<{ digest: string; body: string }> {
  const hash = createHash('sha256');
  const parts: string[] = [];
  // `stored` for the body alone (the threshold), `both` for the text the digest and the body share.
  const stored = (text: string) => {
    if (withBody) parts.push(text);
  };
  const both = (text: string) => {
    hash.update(text);
    stored(text);
  };
  both('[');
  for (const [zi, z] of (toJson(zones) as unknown as Array<Record<string, unknown>>).entries()) {
    both(zi === 0 ? '{' : ',{');
    let firstDigested = true;
    let firstStored = true;
    // A zone plan's keys are names (no integer-like key), so sorted is the order canonicalJson writes.
    for (const key of Object.keys(z).sort()) {
      const v = z[key];
      if (v === undefined) continue; // as JSON.stringify leaves it out
      if (key === 'threshold') {
        // Stored, not digested.
        stored(`${firstStored ? '' : ','}${JSON.stringify(key)}:${canonicalJson(v)}`);
        firstStored = false;
        continue;
      }
      hash.update(firstDigested ? '' : ',');
      stored(firstStored ? '' : ',');
      firstDigested = firstStored = false;
      both(`${JSON.stringify(key)}:`);
      if (!Array.isArray(v)) {
        both(canonicalJson(v));
        continue;
      }
      both('[');
      // 64 items per piece: one hash update and one string each (thousands of small updates cost more).
      for (let i = 0; i < v.length; i += 64) {
        await slicer.check();
        const piece: string[] = [];
        for (let j = i; j < Math.min(i + 64, v.length); j++) {
          const item: unknown = v[j];
          piece.push(item === undefined ? 'null' : canonicalJson(item));
        }
        both(`${i === 0 ? '' : ','}${piece.join(',')}`);
      }
      both(']');
    }
    both('}');
  }
  both(']');
  return { digest: hash.digest('hex'), body: parts.join('') };
}

type JsonZonePlan = Omit<ZonePlan, 'baseGeneration'> & { baseGeneration: string };

function toJson(zones: ZonePlan[]): JsonZonePlan[] {
  return zones.map((z) => ({ ...z, baseGeneration: z.baseGeneration.toString() }));
}

function fromJson(body: unknown): ZonePlan[] {
  return (body as JsonZonePlan[]).map((z) => ({ ...z, baseGeneration: BigInt(z.baseGeneration) }));
}
