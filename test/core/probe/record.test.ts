/**
 * What a refresh records for the prober (core/probe/record.ts, core/apply/publish.ts) and the
 * visibility API the rest of dnsplane reads (core/visibility/visibility.ts): an apply's journal row is
 * `published` at its refresh with its record sets; a later apply of the same set supersedes the
 * earlier's; waitVisible answers once a row is final (woken by NOTIFY), or the state at its timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apply } from '../../../src/core/apply/index.js';
import { latestPublishes } from '../../../src/core/journal/apply-view.js';
import { visibilityOf, VisibilityWatch, waitVisible } from '../../../src/core/visibility/visibility.js';
import * as store from '../../../src/store/index.js';
import { applyRoom, type ApplyRoom } from '../../helpers/core-apply.js';
import { until } from '../../helpers/until.js';

const ZONE = 'record.test';
let room: ApplyRoom;

beforeAll(async () => {
  room = await applyRoom({ zones: { [ZONE]: [{ subDomain: 'old', fieldType: 'A', target: '192.0.2.9' }] }, tenants: ['t'] });
});

afterAll(async () => {
  await room?.close();
});

async function put(name: string, targets: string[] | null): Promise<string> {
  const endpoints = targets ? [{ dnsName: `${name}.${ZONE}`, recordType: 'A', targets, ttl: 300 }] : [];
  const result = await apply(room.ctx, room.tenants['t']!, {
    input: { kind: 'changes', policy: 'sync', changes: { create: endpoints, updateOld: [], updateNew: [], delete: [] } },
  });
  const zone = result.zones[0]!;
  expect(zone.status).toBe('applied');
  return zone.journalId!;
}

async function probesOf(journalId: string) {
  const { rows } = await room.db.pool.query<{ probe_id: string }>(`SELECT probe_id::text AS probe_id FROM probe_sets WHERE journal_id = $1::bigint`, [
    journalId,
  ]);
  return Promise.all([...new Set(rows.map((r) => r.probe_id))].map((id) => store.probeSets(room.db.pool, id)));
}

describe('recorded at the refresh', () => {
  it('an apply is published at its refresh, with the record sets it changed and what each must answer', async () => {
    const before = Date.now();
    const id = await put('www', ['192.0.2.1', '192.0.2.2']);
    const v = await visibilityOf(room.ctx, id);
    expect(v).toMatchObject({ journalId: id, zone: ZONE, state: 'published', servers: [] });
    expect(v!.publishedAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    const [sets] = await probesOf(id);
    expect(sets).toEqual([{ journalId: id, name: `www.${ZONE}`, type: 'A', targets: ['192.0.2.1', '192.0.2.2'], supersededBy: null }]);
  });

  it('a later apply of the same record set supersedes the earlier one not yet seen', async () => {
    const first = await put('twice', ['192.0.2.3']);
    const second = await put('twice', ['192.0.2.4']);
    const [firstSets] = await probesOf(first);
    const [secondSets] = await probesOf(second);
    expect(firstSets![0]!.supersededBy).toBe(second);
    expect(secondSets![0]!.supersededBy).toBeNull();
  });

  it('an unknown journal row has no visibility; one that published nothing is unverified, with why', async () => {
    expect(await visibilityOf(room.ctx, '999999')).toBeUndefined();
    await expect(waitVisible(room.ctx, ['999999'], { timeoutMs: 0 })).rejects.toThrow(/journal entry "999999" not found/);
    const admin = await store.insertAdminAction(room.db.pool, { zone: null, tenantId: null, intent: { kind: 'test', summary: 'x' }, result: {} });
    expect(await visibilityOf(room.ctx, admin)).toMatchObject({ state: 'unverified', reason: expect.stringMatching(/nothing recorded of its publication/) });
  });
});

describe('latestPublishes', () => {
  it('lists the applies that published, newest first, per zone', async () => {
    const older = await put('recent-a', ['192.0.2.10']);
    const newer = await put('recent-b', ['192.0.2.11']);
    const recent = await latestPublishes(room.ctx, [ZONE, 'other.test']);
    expect(
      recent
        .get(ZONE)!
        .slice(0, 2)
        .map((v) => [v.journalId, v.state]),
    ).toEqual([
      [newer, 'published'],
      [older, 'published'],
    ]);
    expect(recent.get('other.test') ?? []).toEqual([]);
  });
});

describe('waitVisible', () => {
  it('answers the state so far at its timeout', async () => {
    const id = await put('slow', ['192.0.2.5']);
    const [v] = await waitVisible(room.ctx, [id], { timeoutMs: 50 });
    expect(v).toMatchObject({ journalId: id, state: 'published' });
  });

  it('answers once the row is final, woken by NOTIFY dnsplane_visibility through the watch', async () => {
    const watch = new VisibilityWatch();
    const woken: string[] = [];
    const listener = await store.listen(room.db.pool, {
      visibility: (id) => {
        woken.push(id);
        watch.notify(id);
      },
    });
    try {
      const ctx = { ...room.ctx, visibility: watch };
      const id = await put('seen', ['192.0.2.6']);
      const waiting = waitVisible(ctx, [id], { timeoutMs: 600_000 });
      await until('the wait to subscribe', () => watch.waiting === 1);
      const visibleAt = new Date();
      // The prober's write, as it makes it once every server answered.
      expect(
        await store.finishVisibility(room.db.pool, id, {
          state: 'visible',
          visibleAt,
          servers: [{ server: '192.0.2.53:53', firstAnsweredAt: visibleAt.toISOString(), behind: [] }],
        }),
      ).toBe(true);
      const [v] = await waiting;
      expect(v).toMatchObject({ journalId: id, state: 'visible', visibleAt, servers: [{ server: '192.0.2.53:53', firstAnsweredAt: visibleAt, behind: [] }] });
      expect(woken).toContain(id);
      expect(watch.waiting).toBe(0);
      // Final once: a second write changes nothing.
      expect(await store.finishVisibility(room.db.pool, id, { state: 'not_visible', servers: [] })).toBe(false);
    } finally {
      await listener.stop();
    }
  });

  it('without a watch, a wait listens on its own', async () => {
    const id = await put('own', ['192.0.2.8']);
    const waiting = waitVisible(room.ctx, [id], { timeoutMs: 600_000 });
    await until(
      'the wait to listen',
      async () =>
        (
          await room.db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%visibility'`, [
            store.LISTENER_APPLICATION_NAME,
          ])
        ).rowCount === 1,
    );
    expect(await store.finishVisibility(room.db.pool, id, { state: 'unverified', servers: [], reason: 'no server answered' })).toBe(true);
    expect((await waiting)[0]).toMatchObject({ state: 'unverified', reason: 'no server answered' });
  });

  it('an aborted wait answers at once', async () => {
    const id = await put('aborted', ['192.0.2.7']);
    const abort = new AbortController();
    const waiting = waitVisible(room.ctx, [id], { timeoutMs: 600_000, signal: abort.signal });
    abort.abort();
    expect((await waiting)[0]!.state).toBe('published');
  });
});
