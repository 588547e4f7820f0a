/**
 * Visibility on the wire (proto/dnsplane/v1/visibility.proto), and the wait of a call that publishes:
 * the journal rows it waits on, core's waitVisible, each row's state put back in its place.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { CoreContext } from '../core/context.js';
import { waitVisible, type Visibility } from '../core/visibility/visibility.js';
import { ServerVisibilitySchema, VisibilitySchema, VisibilityState, type Visibility as PbVisibility } from '../gen/dnsplane/v1/visibility_pb.js';
import type { ZoneApplyResult as PbZoneApplyResult } from '../gen/dnsplane/v1/zone_pb.js';
import { ApplyStatus } from '../gen/dnsplane/v1/zone_pb.js';
import type { WaitAsked } from './wait.js';

const STATE: Record<Visibility['state'], VisibilityState> = {
  published: VisibilityState.PUBLISHED,
  visible: VisibilityState.VISIBLE,
  not_visible: VisibilityState.NOT_VISIBLE,
  unverified: VisibilityState.UNVERIFIED,
  superseded: VisibilityState.SUPERSEDED,
};

export function visibilityToPb(v: Visibility): PbVisibility {
  return create(VisibilitySchema, {
    journalId: v.journalId,
    zone: v.zone,
    state: STATE[v.state],
    publishedAt: v.publishedAt ? timestampFromDate(v.publishedAt) : undefined,
    visibleAt: v.visibleAt ? timestampFromDate(v.visibleAt) : undefined,
    servers: v.servers.map((s) =>
      create(ServerVisibilitySchema, {
        server: s.server,
        firstAnsweredAt: s.firstAnsweredAt ? timestampFromDate(s.firstAnsweredAt) : undefined,
        behind: s.behind,
        error: s.error ?? '',
      }),
    ),
    reason: v.reason ?? '',
    supersededBy: v.supersededBy ?? '',
  });
}

/**
 * Waits as asked for the journal rows and answers their visibility by id: final, or the state so far
 * when the wait ended (its timeout, the client gone, the server stopping: shutdown does not wait for it).
 */
export async function waitFor(ctx: CoreContext, journalIds: readonly string[], wait: WaitAsked): Promise<Map<string, PbVisibility>> {
  if (journalIds.length === 0) return new Map();
  const stopping = new AbortController();
  const unsubscribe = ctx.lifecycle?.onStop(() => stopping.abort()) ?? (() => undefined);
  try {
    const now = await waitVisible(ctx, journalIds, { timeoutMs: wait.timeoutMs, signal: AbortSignal.any([wait.signal, stopping.signal]) });
    return new Map(now.map((v) => [v.journalId, visibilityToPb(v)]));
  } finally {
    unsubscribe();
  }
}

/**
 * Apply's wait: every publish of the zones that were applied (each batch's journal row), then each
 * zone's and batch's visibility set on its result. Zones that published nothing are not waited for.
 */
export async function waitForZones(ctx: CoreContext, zones: PbZoneApplyResult[], wait: WaitAsked): Promise<void> {
  const applied = (z: PbZoneApplyResult) => z.status === ApplyStatus.APPLIED && z.journalId !== '';
  const ids = zones.flatMap((z) => [...z.batches.map((b) => b.journalId), ...(applied(z) ? [z.journalId] : [])]).filter((id) => id !== '');
  const found = await waitFor(ctx, ids, wait);
  for (const z of zones) {
    if (applied(z)) z.visibility = found.get(z.journalId);
    for (const b of z.batches) b.visibility = found.get(b.journalId);
  }
}
