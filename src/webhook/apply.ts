/**
 * POST /records: one change set applied, batch by batch, through the backend's session; what was
 * refused logged (capped), counted and named in the answer; the zones' outcomes mapped to a status
 * (handler.ts's header says why each status).
 *
 *   applyBatches    the change set in batches; an entry the centre refuses dropped and the batch retried
 *   reportRefusals  the invalid entries and the conflicts: warn lines (capped), counters, the body's text
 *   replyOf         the zones' outcomes -> 204, 500 or 503
 */
import type { Logger } from 'pino';
import type { Slicer } from '../core/slices.js';
import { familyChangeSet } from '../dns/txt-family.js';
import { isTxtFamily, recordSetKey, type ChangeAction, type Endpoint } from '../dns/types.js';
import { WebhookError, type WebhookSession, type ZoneOutcome } from './backend.js';
import { TEXT_TYPE, type Reply } from './http.js';
import type { WebhookMetrics } from './metrics.js';
import { batches, batchSize, prepareChangesSteps, toChangeSet, without, type PreparedChanges, type Rejection, type TenantScope } from './normalize.js';
import type { WireChanges } from './protocol.js';

/** Entries refused by the centre one at a time (beyond what was checked here) before giving up with 500. */
const MAX_CENTRAL_REFUSALS = 100;
/**
 * Refusals of one kind (invalid, conflict) logged one by one per request; the rest are counted in one
 * more line. A change set of 50,000 bad entries would otherwise write 50,000 warn lines, every loop.
 */
export const MAX_LOGGED_REFUSALS = 20;

interface Reporting {
  log: Logger;
  metrics?: WebhookMetrics;
}

interface Applied {
  zones: ZoneOutcome[];
  /** Entries refused here and by the centre, in the order found. */
  rejected: Rejection[];
  /** The error that stopped the change set, if one did (the zones before it stay applied). */
  failure?: WebhookError;
}

/**
 * The prepared change set applied batch by batch. When the centre refuses one entry (a check this
 * side could not make, e.g. a suffix the sidecar does not know), that entry is dropped, reported and
 * the rest of its batch retried, up to MAX_CENTRAL_REFUSALS per batch; any other refusal stops the change set.
 */
async function applyBatches(session: WebhookSession, prepared: PreparedChanges): Promise<Applied> {
  const applied: Applied = { zones: [], rejected: [...prepared.rejected] };
  const family = await familyOf(session, prepared);
  for (let batch of batches(prepared)) {
    for (let refusals = 0; batchSize(batch) > 0; ) {
      const { changes, origin } = toChangeSet(batch);
      try {
        applied.zones.push(...(await session.apply(family ? familyChangeSet(changes, family) : changes)).zones);
        break;
      } catch (e) {
        if (!(e instanceof WebhookError)) throw e;
        const item = e.entry && refusals < MAX_CENTRAL_REFUSALS ? origin(e.entry.list, e.entry.index) : undefined;
        if (!item) return { ...applied, failure: e };
        const entry = 'new' in item ? item.new : item;
        const at = `${entry.list}[${entry.index}]`;
        applied.rejected.push({
          list: entry.list,
          index: entry.index,
          dnsName: entry.endpoint.dnsName,
          recordType: entry.endpoint.recordType,
          reason: e.message.replace(/changes\.\w+\[\d+\]/, at),
        });
        batch = without(batch, item);
        refusals++;
      }
    }
  }
  return applied;
}

/**
 * The tenant's record sets when a TXT the change set writes is at a name where it has an SPF, DKIM or
 * DMARC set: external-dns sees and writes that name's TXT family as one TXT set (dns/txt-family.ts),
 * which its members' changes then make true. Undefined when no TXT entry needs it (the usual case).
 */
async function familyOf(session: WebhookSession, p: PreparedChanges): Promise<readonly Endpoint[] | undefined> {
  const txtNames = new Set(
    [...p.creates.map((c) => c.endpoint), ...p.updates.map((u) => u.new.endpoint), ...p.deletes.map((d) => d.endpoint)]
      .filter((e) => e.recordType === 'TXT')
      .map((e) => e.dnsName),
  );
  if (txtNames.size === 0) return undefined;
  const current = await session.records();
  return current.some((e) => e.recordType !== 'TXT' && isTxtFamily(e.recordType) && txtNames.has(e.dnsName)) ? current : undefined;
}

/** Record set -> the list external-dns named it in ('create', 'update' for updateNew, 'delete'). */
function askedActions(p: Pick<PreparedChanges, 'creates' | 'updates' | 'deletes'>): Map<string, ChangeAction> {
  const out = new Map<string, ChangeAction>();
  const put = (e: Endpoint, action: ChangeAction) => out.set(recordSetKey(e.dnsName, e.recordType), action);
  for (const c of p.creates) put(c.endpoint, 'create');
  for (const u of p.updates) put(u.new.endpoint, 'update');
  for (const d of p.deletes) put(d.endpoint, 'delete');
  return out;
}

const tally = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

/** One warn line per invalid entry up to MAX_LOGGED_REFUSALS, one counter increment per list. */
function reportRejections(tenant: string, rejected: readonly Rejection[], { log, metrics }: Reporting): void {
  const rejectedBy = new Map<string, number>();
  rejected.forEach((r, i) => {
    if (i < MAX_LOGGED_REFUSALS)
      log.warn(
        { tenant, webhook: 'apply', entry: `${r.list}[${r.index}]`, dnsName: r.dnsName, recordType: r.recordType, reason: r.reason },
        'webhook change refused: invalid',
      );
    tally(rejectedBy, r.list);
  });
  for (const [list, n] of rejectedBy) metrics?.rejection(tenant, list, n);
  if (rejected.length > MAX_LOGGED_REFUSALS) {
    log.warn(
      { tenant, webhook: 'apply', refused: rejected.length, logged: MAX_LOGGED_REFUSALS },
      `webhook changes refused: invalid, ${rejected.length - MAX_LOGGED_REFUSALS} more not logged one by one`,
    );
  }
}

/**
 * One warn line per conflict up to MAX_LOGGED_REFUSALS, one counter increment per zone and action;
 * returns the lines logged (for the answer's body) and how many conflicts there were. A conflict is
 * named by what external-dns asked (its list), not by what dnsplane would have done: a create of a set
 * that exists would have been an update of it.
 */
function reportConflicts(
  tenant: string,
  zones: readonly ZoneOutcome[],
  asked: Map<string, ChangeAction>,
  { log, metrics }: Reporting,
): { lines: string[]; count: number } {
  const lines: string[] = [];
  let count = 0;
  for (const z of zones) {
    const byAction = new Map<string, number>();
    for (const c of z.conflicts) {
      const action = asked.get(recordSetKey(c.endpoint.dnsName, c.endpoint.recordType)) ?? c.action;
      if (count++ < MAX_LOGGED_REFUSALS) {
        log.warn(
          { tenant, webhook: 'apply', zone: z.zone, action, dnsName: c.endpoint.dnsName, recordType: c.endpoint.recordType, owner: c.owner, reason: c.reason },
          'webhook change refused: conflict',
        );
        lines.push(`${action} ${c.endpoint.dnsName} ${c.endpoint.recordType}: ${c.reason}`);
      }
      tally(byAction, action);
    }
    for (const [action, n] of byAction) metrics?.conflict(tenant, z.zone, action, n);
  }
  if (count > MAX_LOGGED_REFUSALS) {
    log.warn(
      { tenant, webhook: 'apply', refused: count, logged: MAX_LOGGED_REFUSALS },
      `webhook changes refused: conflict, ${count - MAX_LOGGED_REFUSALS} more not logged one by one`,
    );
  }
  return { lines, count };
}

/**
 * The refused changes in words, for the answer's body ('' when none): the first MAX_LOGGED_REFUSALS
 * of each kind, as logged, and how many more.
 */
function refusalText(all: readonly Rejection[], conflictLines: readonly string[], conflicts: number): string {
  const rejected = all.filter((r) => !r.superseded);
  const total = rejected.length + conflicts;
  if (total === 0) return '';
  const lines = [`${total} change(s) refused; the others were applied (dnsplane's log names each refusal):`];
  for (const r of rejected.slice(0, MAX_LOGGED_REFUSALS)) lines.push(`invalid ${r.dnsName} ${r.recordType}: ${r.reason}`);
  if (rejected.length > MAX_LOGGED_REFUSALS) lines.push(`… ${rejected.length - MAX_LOGGED_REFUSALS} more invalid`);
  for (const c of conflictLines) lines.push(`conflict ${c}`);
  if (conflicts > conflictLines.length) lines.push(`… ${conflicts - conflictLines.length} more conflicts`);
  return `${lines.join('\n')}\n`;
}

function reportOverThreshold(tenant: string, zone: string, message: string, { log, metrics }: Reporting): void {
  log.warn(
    {
      tenant,
      webhook: 'apply',
      zone,
      proceed: "apply the change with force (dnsplane plan/apply --force), or have an admin raise the tenant's limit (dnsplane tenant set-max-change)",
    },
    message,
  );
  metrics?.thresholdRefusal(tenant, zone);
}

/** The zones' outcomes as the answer: 204, or 500/503 naming the failed zones and the refused changes. */
function replyOf(zones: readonly ZoneOutcome[], refusals: string, summary: Record<string, unknown>): Reply {
  // A zone refused whole (the tenant's write quota: nothing sent) is a failure too: external-dns asks again.
  const failed = zones.filter((z) => z.status === 'failed' || z.status === 'stale' || z.overThreshold || (z.status === 'refused' && z.error !== undefined));
  if (failed.length > 0) {
    // Over the threshold is 503: external-dns retries every loop, and nothing is deleted until
    // someone forces it or raises the limit (the log line says how).
    const status = failed.some((z) => z.transient || z.overThreshold) ? 503 : 500;
    return {
      status,
      headers: { 'content-type': TEXT_TYPE },
      body: `${failed.map((z) => `${z.zone}: ${z.error ?? z.status}`).join('\n')}\n${refusals}`,
      log: summary,
    };
  }
  // Refused entries are a soft error once the rest is applied (handler.ts's header says why).
  if (refusals !== '') return { status: 500, headers: { 'content-type': TEXT_TYPE }, body: refusals, log: summary };
  return { status: 204, log: summary };
}

/** POST /records's answer; a failure that stopped the change set is thrown with the summary on it. */
export async function applyChanges(session: WebhookSession, scope: TenantScope, wire: WireChanges, slicer: Slicer, reporting: Reporting): Promise<Reply> {
  const tenant = scope.tenant;
  const prepared = await slicer.run(prepareChangesSteps(wire, scope));
  const { zones, rejected, failure } = await applyBatches(session, prepared);
  reportRejections(tenant, rejected, reporting);
  const conflicts = reportConflicts(tenant, zones, askedActions(prepared), reporting);
  const summary = {
    requested: { create: wire.create.length, updateNew: wire.updateNew.length, delete: wire.delete.length },
    zones: Object.fromEntries(zones.map((z) => [z.zone, z.status])),
    ovhCalls: zones.reduce((n, z) => n + z.calls, 0),
    conflicts: zones.reduce((n, z) => n + z.conflicts.length, 0),
    rejected: rejected.length,
    ...(prepared.unpaired.length ? { unpairedUpdateOld: prepared.unpaired.length } : {}),
  };
  if (failure) {
    if (failure.overThreshold) reportOverThreshold(tenant, failure.zone, failure.message, reporting);
    throw Object.assign(failure, { summary });
  }
  for (const z of zones.filter((x) => x.overThreshold)) reportOverThreshold(tenant, z.zone, z.error ?? '', reporting);
  return replyOf(zones, refusalText(rejected, conflicts.lines, conflicts.count), summary);
}
