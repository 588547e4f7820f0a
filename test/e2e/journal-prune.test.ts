/**
 * `dnsplane journal prune` against a running server's database: real applies, their rows aged, then
 * pruned from the command line — 0 OVH calls; afterwards `zone at` (AdminService.ExportZone at a past
 * time or generation) refuses a point behind the horizon, naming it, and still answers from it on; a
 * revert of a pruned entry is NotFound; the prune is in the journal the admin lists.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journalCommand } from '../../src/cli/journal.js';
import { PlanRequestSchema, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { SimRecordInit } from '../../src/ovhsim/index.js';
import { capturedIo, commandJson } from '../helpers/cli-io.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import pg from 'pg';

const ZONE = 'example.com';
const rec = (subDomain: string, fieldType: string, target: string): SimRecordInit => ({ subDomain, fieldType, target, ttl: 0 });
const body = (t: string) => t.split('\n').filter((l) => !l.startsWith('; '));

let h: Harness;
let admin: string;
let alice: string;
let pool: pg.Pool;

const create1 = (name: string) =>
  h.zoneClient(alice).apply({
    source: {
      case: 'plan',
      value: create(PlanRequestSchema, {
        policy: Policy.UPSERT_ONLY,
        input: { case: 'desired', value: { zones: [ZONE], endpoints: [ep(`${name}.${ZONE}`, 'A', ['192.0.2.1'])] } },
      }),
    },
  });

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [rec('', 'NS', 'dns1.ovh.net.')] } });
  admin = await h.tenant('root', [ZONE], { admin: true });
  alice = await h.tenant('alice', [ZONE]);
  pool = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
});

afterAll(async () => {
  await pool?.end();
  await h?.close();
});

describe('dnsplane journal prune', () => {
  it('deletes the entries older than asked, after which zone at refuses to go behind them and answers from them on', async () => {
    const c = h.adminClient(admin);
    const old1 = await create1('one');
    const old2 = await create1('two');
    const atOld2 = await c.exportZone({ zone: ZONE });
    const recent = await create1('three');
    const [j1, j2, j3] = [old1, old2, recent].map((r) => r.zones[0]!.journalId);
    const generationOld2 = old2.zones[0]!.generation;
    expect(generationOld2).toBe(atOld2.generation);
    // Everything up to the second apply happened 40 days ago.
    await pool.query(`UPDATE journal SET started_at = started_at - interval '40 days', finished_at = finished_at - interval '40 days' WHERE id <= $1`, [j2]);
    const olderCount = Number((await pool.query(`SELECT count(*) FROM journal WHERE id <= $1`, [j2])).rows[0].count);
    const env = { DATABASE_URL: h.databaseUrl };
    // zone at reads only the history since the point it is asked for (bounded by the newest apply an
    // hour or more before it): at 35 days ago, the two old applies stand and the recent one is undone.
    const daysAgo = (d: number) => timestampFromDate(new Date(Date.now() - d * 86_400_000));
    expect(body((await c.exportZone({ zone: ZONE, atTime: daysAgo(35) })).zoneFile).slice(3)).toEqual(body(atOld2.zoneFile).slice(3));

    h.sim.clearCalls();
    const dry = await commandJson(journalCommand, ['prune', '--older-than', '30d', '--dry-run'], capturedIo(env));
    expect(dry).toMatchObject({ entries: olderCount, plans: 0, zones: [], dryRun: true });
    expect(Number((await pool.query(`SELECT count(*) FROM journal WHERE id <= $1`, [j2])).rows[0].count)).toBe(olderCount);

    const io = capturedIo(env);
    expect(await journalCommand.run(['prune', '--older-than', '720h'], io)).toBe(0);
    expect(io.lines[0]).toMatch(new RegExp(`^deleted ${olderCount} journal entries and 0 plans finished before \\S+Z$`));
    expect(io.lines[1]).toMatch(/^"dnsplane zone at" now goes back to \S+Z at the earliest for example\.com$/);
    expect(callLines(h.sim)).toEqual([]);
    expect((await pool.query<{ id: string }>(`SELECT id::text AS id FROM journal WHERE id <= $1`, [j2])).rows).toEqual([]);

    // zone at: behind the horizon refused, naming it; at the last generation pruned and after, answered.
    await expectRejected(
      c.exportZone({ zone: ZONE, atGeneration: generationOld2 - 1n }),
      Code.InvalidArgument,
      new RegExp(
        `^at_generation: the journal of example\\.com was pruned before \\S+Z \\(dnsplane journal prune\\), up to generation ${generationOld2}: the zone can be shown at that generation or later, not at ${generationOld2 - 1n}$`,
      ),
    );
    await expectRejected(
      c.exportZone({ zone: ZONE, atTime: daysAgo(35) }),
      Code.InvalidArgument,
      /^at_time: the journal of example\.com was pruned before \S+Z \(dnsplane journal prune\): the zone can be shown as it was at that time or later, not at \S+Z$/,
    );
    expect(body((await c.exportZone({ zone: ZONE, atGeneration: generationOld2 })).zoneFile)).toEqual(body(atOld2.zoneFile));
    expect(body((await c.exportZone({ zone: ZONE, atTime: daysAgo(1) })).zoneFile).slice(3)).toEqual(body(atOld2.zoneFile).slice(3));

    // A pruned entry is gone for revert too; the recent one is still there; the prune is in the journal.
    await expectRejected(
      c.planRevert({ journalId: j1! }),
      Code.NotFound,
      new RegExp(`^journal entry ${j1} does not exist \\(entries finished before \\S+Z were pruned: dnsplane journal prune\\)$`),
    );
    expect((await c.planRevert({ journalId: j3! })).reverts).toBe(j3);
    const listed = await c.listJournal({ limit: 10 });
    expect(listed.entries.map((e) => e.summary)).toContainEqual(
      expect.stringMatching(new RegExp(`^journal pruned before \\S+Z from the command line: ${olderCount} entries and 0 plans$`)),
    );
  });

  it('says what is wrong with its arguments, naming the flag, before it opens any database', async () => {
    // A database that cannot be reached: each refusal below comes before the command would open it.
    const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' };
    await expect(journalCommand.run(['prune'], capturedIo(env))).rejects.toThrow(/^--older-than: is required: how old an entry must be to go \(e\.g\. 90d\)$/);
    await expect(journalCommand.run(['prune', '--older-than', '12h'], capturedIo(env))).rejects.toThrow(/^--older-than: must be at least 24h: .*, got 12h$/);
    await expect(journalCommand.run(['prune', '--older-than', 'a while'], capturedIo(env))).rejects.toThrow(
      /^--older-than: must be a duration like 500ms, 30s, 15m, 1h or 7d, got "a while"$/,
    );
    await expect(journalCommand.run(['prune', 'everything', '--older-than', '90d'], capturedIo(env))).rejects.toThrow(/^arguments: unexpected "everything"/);
    await expect(journalCommand.run(['prune', '--older-than', '90d', '--dry-run'], capturedIo(env))).rejects.toThrow(/127\.0\.0\.1:1|ECONNREFUSED/);
    expect(journalCommand.helpFor!(['prune'])).toMatch(/^Usage: dnsplane journal prune --older-than DURATION/);
  });
});
