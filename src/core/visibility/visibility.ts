/**
 * Visibility: whether what an apply published is answered by the zone's authoritative servers
 * (issue 24; docs/ARCHITECTURE.md "Visibility"). Each journal row of an apply that published is
 * `published` from its refresh on; the prober (core/probe/prober.ts) asks the servers until every record
 * set it changed answers as published on every server (`visible`), or until DNSPLANE_VISIBLE_TIMEOUT
 * (`not_visible`: which servers and names still answer older data; `unverified`: no server could be
 * asked, and why). A later apply that changed the same record set before it was seen `supersedes` it.
 *
 * What the rest of dnsplane uses: `visibilityOf` (one row, now) and `waitVisible` (rows until each is
 * final, or the state at the timeout; woken by NOTIFY dnsplane_visibility, never by a tight poll).
 */
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';

export { VisibilityWatch } from '../visibility-watch.js';

export type VisibilityState = 'published' | 'visible' | 'not_visible' | 'unverified' | 'superseded';

/** The final states: waitVisible returns once every row is in one. */
export const FINAL_STATES: ReadonlySet<VisibilityState> = new Set(['visible', 'not_visible', 'unverified', 'superseded']);

export interface ServerVisibility {
  /** host:port asked (the zone's name server, resolved, or one of DNSPLANE_AUTHORITATIVE_SERVERS). */
  server: string;
  /** When it first answered every record set the apply changed as published. */
  firstAnsweredAt?: Date;
  /** The record sets ("name TYPE") it still answered with older data when last asked. */
  behind: string[];
  /** Why it could not be asked when last tried (timeout, refused, a broken answer). */
  error?: string;
}

export interface Visibility {
  journalId: string;
  zone: string;
  state: VisibilityState;
  /** When the apply's refresh went out. */
  publishedAt?: Date;
  /** When the last server first answered everything (state visible). */
  visibleAt?: Date;
  servers: ServerVisibility[];
  /** Why the state is what it is (not_visible, unverified, superseded; a row that published nothing). */
  reason?: string;
  /** The later apply (journal id) that changed the same record set before this one was seen. */
  supersededBy?: string;
}

/** A journal row's visibility; undefined when there is no such row. */
export async function visibilityOf(ctx: CoreContext, journalId: string): Promise<Visibility | undefined> {
  const [one] = await readVisibility(ctx, [journalId]);
  return one;
}

/** Whether waitVisible stops waiting for this one. */
export function isFinal(v: Visibility): boolean {
  return FINAL_STATES.has(v.state);
}

/**
 * Waits until every row is final (visible, not_visible, unverified, superseded), or until `timeoutMs`
 * (or `signal`) and answers the state so far. Rows that published nothing answer `unverified` with the
 * reason at once; a row still in flight is waited for. A row that does not exist: store.NotFoundError.
 * Woken by NOTIFY dnsplane_visibility (ctx.visibility, the server's listener; without it, a listener
 * of its own for the wait), and re-reads every VISIBILITY_RECHECK_MS in case a notification was lost.
 */
export async function waitVisible(ctx: CoreContext, journalIds: readonly string[], opts: { timeoutMs: number; signal?: AbortSignal }): Promise<Visibility[]> {
  const ids = [...new Set(journalIds)];
  const until = performance.now() + Math.max(0, opts.timeoutMs);
  let woken: (() => void) | undefined;
  const wake = () => woken?.();
  const watch = ctx.visibility;
  let own: store.Listener | undefined;
  let unsubscribe = () => {};
  if (watch) unsubscribe = watch.subscribe(ids, wake);
  try {
    if (!watch) own = await store.listen(ctx.pool, { visibility: (id) => ids.includes(id) && wake() }, { onReconnect: wake });
    for (;;) {
      const now = await readVisibility(ctx, ids);
      const missing = ids.find((id) => !now.some((v) => v.journalId === id));
      if (missing !== undefined) throw new store.NotFoundError('journal entry', missing);
      const left = until - performance.now();
      if (now.every(isFinal) || left <= 0 || opts.signal?.aborted) return now;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, VISIBILITY_RECHECK_MS));
        function done() {
          clearTimeout(timer);
          opts.signal?.removeEventListener('abort', done);
          woken = undefined;
          resolve();
        }
        woken = done;
        opts.signal?.addEventListener('abort', done, { once: true });
      });
    }
  } finally {
    unsubscribe();
    await own?.stop();
  }
}

/** How often a wait re-reads without a notification (one lost while the listener reconnected). */
export const VISIBILITY_RECHECK_MS = 5_000;

/** The rows that exist, in the order asked, as Visibility. */
export async function readVisibility(ctx: CoreContext, ids: readonly string[]): Promise<Visibility[]> {
  return (await store.journalVisibility(ctx.pool, ids)).map(toVisibility);
}

function toVisibility(r: store.JournalVisibilityRow): Visibility {
  const base = { journalId: r.id, zone: r.zone, servers: serversOf(r.servers) };
  if (r.state === null) {
    // Never published: an admin action, a failed or rolled-back apply, one still in flight (waited
    // for), or one published before visibility was recorded.
    const why =
      r.journalState === 'in_flight'
        ? 'not published yet: the apply is in flight'
        : r.journalState === 'done'
          ? 'nothing recorded of its publication (an admin action, or an apply made before visibility was recorded)'
          : `nothing was published: the apply is ${r.journalState}`;
    return { ...base, state: r.journalState === 'in_flight' ? 'published' : 'unverified', reason: why };
  }
  return {
    ...base,
    state: r.state,
    ...(r.publishedAt ? { publishedAt: r.publishedAt } : {}),
    ...(r.visibleAt ? { visibleAt: r.visibleAt } : {}),
    ...(r.reason !== null ? { reason: r.reason } : {}),
    ...(r.supersededBy !== null ? { supersededBy: r.supersededBy } : {}),
  };
}

/** The journal's visibility_servers (JSON) as ServerVisibility. */
function serversOf(json: store.JsonValue | null): ServerVisibility[] {
  if (!Array.isArray(json)) return [];
  const out: ServerVisibility[] = [];
  for (const s of json) {
    if (typeof s !== 'object' || s === null || Array.isArray(s) || typeof s['server'] !== 'string') continue;
    const first = s['firstAnsweredAt'];
    const behind = s['behind'];
    const error = s['error'];
    out.push({
      server: s['server'],
      ...(typeof first === 'string' ? { firstAnsweredAt: new Date(first) } : {}),
      behind: Array.isArray(behind) ? behind.filter((b): b is string => typeof b === 'string') : [],
      ...(typeof error === 'string' ? { error } : {}),
    });
  }
  return out;
}

/** ServerVisibility as the journal keeps it (JSON). */
export function serversJson(servers: readonly ServerVisibility[]): unknown[] {
  return servers.map((s) => ({
    server: s.server,
    ...(s.firstAnsweredAt ? { firstAnsweredAt: s.firstAnsweredAt.toISOString() } : {}),
    behind: s.behind,
    ...(s.error !== undefined ? { error: s.error } : {}),
  }));
}
