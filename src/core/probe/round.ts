/**
 * One round of one probe: each of the zone's servers is asked its SOA serial, then — when the serial
 * moved since the names were last asked (or a minute passed) — one record set it has not yet answered
 * as published, and when that one answers as published, the others (a refresh reaches a server
 * whole: one set still old means the refresh has not reached it); then each journal row of the probe is judged: every server answered all its
 * sets (visible, or superseded when a later apply changed some of them), or the deadline passed
 * (not_visible: a server answered older data; unverified: none could be asked). Progress and final
 * states are written to the journal (store/visibility.ts); a final state sends NOTIFY.
 */
import { TYPE } from '../../dns/wire/index.js';
import { query, type DnsAnswer } from '../../dnsclient/index.js';
import { messageOf } from '../../lib/error-message.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { serversJson, type ServerVisibility, type VisibilityState } from '../visibility/visibility.js';
import { judge, serialOf, wireType } from './judge.js';
import type { ProbeServer, ServerDirectory } from './servers.js';

/** What a process remembers of one server while it runs a probe. */
interface ServerProgress {
  /** The serial when the names were last asked, and when. */
  namesSerial?: number;
  namesAt: number;
  /** Sets (key) it answered as published, and when first (ms since the epoch). */
  matched: Map<string, number>;
  /** Sets it answered with other data when last asked. */
  behind: Set<string>;
  /** Why it could not be asked when last tried; cleared by an answer it could trust. */
  error?: string;
  /** It gave an answer that could be trusted at least once. */
  answered: boolean;
  /** Journal rows whose first answer by this server was counted (metrics). */
  counted: Set<string>;
}

/** A probe this process runs. */
export interface Running {
  row: store.ProbeRow;
  rounds: number;
  servers: Map<string, ServerProgress>;
  /** The last servers JSON written per journal row (written again only when it changed). */
  written: Map<string, string>;
}

export interface RoundDeps {
  directory: ServerDirectory;
  /** Runs one DNS question within the process's bound on questions in flight. */
  limit: <T>(fn: () => Promise<T>) => Promise<T>;
  queryTimeoutMs: number;
  signal: AbortSignal;
  /** False once the process stopped: nothing more is written. */
  live: () => boolean;
}

const keyOf = (s: { name: string; type: string }) => `${s.name} ${s.type}`;

function progressOf(run: Running, label: string): ServerProgress {
  let p = run.servers.get(label);
  if (!p) run.servers.set(label, (p = { namesAt: 0, matched: new Map(), behind: new Set(), answered: false, counted: new Set() }));
  return p;
}

/** One round; true when every journal row of the probe is final (the probe is done). */
export async function runRound(ctx: CoreContext, run: Running, deps: RoundDeps): Promise<boolean> {
  const zone = run.row.zone;
  const sets = await store.probeSets(ctx.pool, run.row.id);
  const journalIds = [...new Set(sets.map((s) => s.journalId))];
  const open = new Set((await store.journalVisibility(ctx.pool, journalIds)).filter((v) => v.state === 'published').map((v) => v.id));
  const active = sets.filter((s) => s.supersededBy === null && open.has(s.journalId));
  let servers: ProbeServer[] = [];
  let unknown: string | undefined;
  try {
    servers = await deps.directory.of(zone);
  } catch (e) {
    unknown = messageOf(e);
  }
  await Promise.all(servers.map((server) => ask(ctx, zone, server, progressOf(run, server.label), active, deps)));
  if (!deps.live()) return false;
  run.rounds++;
  const now = Date.now();
  for (const journalId of open) {
    await judgeJournal(ctx, run, { journalId, sets: sets.filter((s) => s.journalId === journalId), servers, unknown, now });
    if (!deps.live()) return false;
  }
  return (await store.journalVisibility(ctx.pool, journalIds)).every((v) => v.state !== 'published');
}

/** Asks one server: its serial, then the sets it has not answered yet when the serial moved. */
async function ask(ctx: CoreContext, zone: string, server: ProbeServer, p: ServerProgress, sets: readonly store.ProbeSet[], deps: RoundDeps): Promise<void> {
  const pending = sets.filter((s) => !p.matched.has(keyOf(s)));
  if (pending.length === 0) return;
  const exchange = (name: string, type: number): Promise<DnsAnswer> =>
    deps.limit(() => query(server.address, { name, type }, { timeoutMs: deps.queryTimeoutMs, signal: deps.signal }));
  let serial: number;
  try {
    const got = serialOf(zone, await exchange(zone, TYPE.SOA));
    if (typeof got !== 'number') return failed(ctx, p, got.error);
    serial = got;
  } catch (e) {
    return failed(ctx, p, messageOf(e));
  }
  p.answered = true;
  p.error = undefined;
  // Nothing moved on this server since its names were last asked: asking them again would answer the same.
  if (p.namesSerial === serial && Date.now() - p.namesAt < NAMES_AGAIN_MS) return;
  const asked = Date.now();
  const askSet = async (set: store.ProbeSet): Promise<'match' | 'old' | 'error'> => {
    let verdict: ReturnType<typeof judge>;
    try {
      verdict = judge(zone, set, await exchange(set.name, wireType(set.type)));
    } catch (e) {
      verdict = { error: messageOf(e) };
    }
    const key = keyOf(set);
    if (verdict === 'match') {
      p.matched.set(key, Date.now());
      p.behind.delete(key);
    } else if (verdict === 'old') p.behind.add(key);
    else failed(ctx, p, verdict.error);
    ctx.metrics?.probeQuery(typeof verdict === 'string' ? verdict : 'error');
    return typeof verdict === 'string' ? verdict : 'error';
  };
  // A refresh reaches a server whole: when one of its sets still answers older data, so do the others
  // (noted behind, asked once the serial moves). So one set is asked first, the rest only when it matched.
  const [first, ...rest] = pending;
  if ((await askSet(first!)) === 'old') {
    for (const set of rest) p.behind.add(keyOf(set));
  } else await Promise.all(rest.map(askSet));
  p.namesSerial = serial;
  p.namesAt = asked;
}

/** Names are asked again after this long even when the serial did not move (a server that does not move it). */
const NAMES_AGAIN_MS = 60_000;

function failed(ctx: CoreContext, p: ServerProgress, error: string): void {
  p.error = error;
  ctx.metrics?.probeQuery('error');
}

/** Judges one journal row of the probe: its progress written, or its final state. */
async function judgeJournal(
  ctx: CoreContext,
  run: Running,
  j: { journalId: string; sets: readonly store.ProbeSet[]; servers: readonly ProbeServer[]; unknown?: string; now: number },
): Promise<void> {
  const zone = run.row.zone;
  const superseded = j.sets.filter((s) => s.supersededBy !== null);
  const active = j.sets.filter((s) => s.supersededBy === null);
  const published = run.row.publishedAt.getTime();
  const views: ServerVisibility[] = j.servers.map((server) => {
    const p = progressOf(run, server.label);
    const times = active.map((s) => p.matched.get(keyOf(s)));
    const all = times.every((t): t is number => t !== undefined);
    const first = all ? Math.max(published, ...times) : undefined;
    if (first !== undefined && !p.counted.has(j.journalId)) {
      p.counted.add(j.journalId);
      ctx.metrics?.serverAnswered(zone, server.label, (first - published) / 1000);
    }
    return {
      server: server.label,
      ...(first !== undefined ? { firstAnsweredAt: new Date(first) } : {}),
      behind: first !== undefined ? [] : active.filter((s) => p.behind.has(keyOf(s))).map(keyOf),
      ...(first === undefined && p.error !== undefined ? { error: p.error } : {}),
    };
  });
  const supersededBy = superseded[0]?.supersededBy ?? undefined;
  const visible = j.servers.length > 0 && views.every((v) => v.firstAnsweredAt !== undefined);
  if (active.length === 0 || visible) {
    const times = views.map((v) => v.firstAnsweredAt!.getTime());
    if (supersededBy !== undefined) {
      const names = superseded.map(keyOf).join(', ');
      return finish(ctx, run, j.journalId, 'superseded', views, {
        supersededBy,
        reason: `journal ${supersededBy} changed ${names} again before this apply was answered`,
      });
    }
    return finish(ctx, run, j.journalId, 'visible', views, { visibleAt: new Date(Math.max(published, ...times)) });
  }
  if (j.now >= run.row.deadline.getTime()) {
    const after = `${Math.round((run.row.deadline.getTime() - published) / 1000)} s`;
    const behind = views.filter((v) => v.firstAnsweredAt === undefined && v.behind.length > 0 && progressOf(run, v.server).answered);
    if (behind.length > 0) {
      const reason = `${after} after the refresh, ${behind.map((v) => `${v.server} still answered older data for ${v.behind.join(', ')}`).join('; ')}`;
      return finish(ctx, run, j.journalId, 'not_visible', views, { reason });
    }
    const why =
      j.unknown ??
      views
        .filter((v) => v.firstAnsweredAt === undefined)
        .map((v) => `${v.server}: ${v.error ?? 'no answer it could trust'}`)
        .join('; ');
    return finish(ctx, run, j.journalId, 'unverified', views, { reason: `${after} after the refresh, no answer could be trusted: ${why}` });
  }
  const json = JSON.stringify(serversJson(views));
  if (run.written.get(j.journalId) !== json) {
    await store.noteVisibilityServers(ctx.pool, j.journalId, serversJson(views));
    run.written.set(j.journalId, json);
  }
}

async function finish(
  ctx: CoreContext,
  run: Running,
  journalId: string,
  state: Exclude<VisibilityState, 'published'>,
  views: ServerVisibility[],
  more: { visibleAt?: Date; reason?: string; supersededBy?: string },
): Promise<void> {
  const done = await store.finishVisibility(ctx.pool, journalId, { state, servers: serversJson(views), ...more });
  if (!done) return;
  ctx.metrics?.visibilityFinal(run.row.zone, state);
  const log = {
    zone: run.row.zone,
    journal: journalId,
    state,
    ...(more.reason ? { reason: more.reason } : {}),
    ...(more.visibleAt ? { seconds: (more.visibleAt.getTime() - run.row.publishedAt.getTime()) / 1000 } : {}),
  };
  if (state === 'visible' || state === 'superseded') ctx.log.info(log, 'visibility');
  else ctx.log.warn(log, 'visibility');
}
