/**
 * bench/journal-prune — `dnsplane journal prune` at the size a thousand clusters make. `npm run
 * bench:prune`; not part of `npm test`.
 *
 * A fresh database (DATABASE_URL's server, else an embedded Postgres) holds a journal of
 * BENCH_PRUNE_OLD rows finished 31 to 400 days ago (by default 300,000: a month of a thousand clusters
 * applying ten times a day) and BENCH_PRUNE_NEW rows of the last 30 days, each the size of a real
 * apply's row (~1.5 KB of intent), over 10 zones, with one applied plan per 20 old rows. Then, through
 * core/journal/prune.ts as the command runs it, `--older-than 30d`: first counted (--dry-run), then
 * done. Meanwhile a writer does what every apply does to the journal — insert a row, finish it — every
 * 20 ms, and `zone at`'s read of the applies since a recent time runs every 200 ms: their latency
 * beside the prune and, before it, alone. Printed: the journal's size, the times, rows per second, and
 * the ratios of the writer's and the reader's latency during the prune to alone (goal: the prune holds
 * no lock an apply waits for, so ~1).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pruneJournal } from '../src/core/journal/prune.js';
import * as store from '../src/store/index.js';
import { benchDatabaseOrEmbedded, median, percentile, positiveEnv } from './lib.js';

const OLD = positiveEnv('BENCH_PRUNE_OLD', 300_000);
const NEW = positiveEnv('BENCH_PRUNE_NEW', 100_000);
const DAY = 86_400_000;

function ms(x: number): string {
  return x >= 1000 ? `${(x / 1000).toFixed(1)} s` : `${x.toFixed(1)} ms`;
}

/** Runs `op` every `everyMs` until stop(); its latencies. */
function loop(everyMs: number, op: () => Promise<unknown>): { stop(): Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const t = performance.now();
      await op();
      latencies.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return latencies;
    },
  };
}

const summary = (xs: number[]) => `median ${ms(median(xs))}, p99 ${ms(percentile(xs, 99))}, max ${ms(Math.max(...xs))} (${xs.length})`;

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-prune-'));
  const { url, drop } = await benchDatabaseOrEmbedded('dnsplane_bench_prune', path.join(dir, 'pg'));
  const pool = new pg.Pool({ connectionString: url, max: 6 });
  try {
    await store.migrate(pool);
    const zones = Array.from({ length: 10 }, (_, i) => `z${i}.example`);
    await store.ensureZones(pool, zones);
    const tenant = await store.createTenant(pool, { name: 'bench', tokenSha256: randomBytes(32), scopes: [], zones, suffixes: [] });
    let t = performance.now();
    // Rows as an apply writes them: an intent naming a set, its operations and what it held before, a result with the generation.
    const seed = (from: number, count: number, firstDay: number, lastDay: number) =>
      pool.query(
        `INSERT INTO journal (zone, tenant_id, plan_id, intent, state, result, started_at, finished_at)
         SELECT 'z' || (g % 10) || '.example', $1::bigint, NULL,
                jsonb_build_object('kind', 'changes', 'names', jsonb_build_array(jsonb_build_object('subDomain', 'host' || g, 'fieldType', 'A')),
                  'operations', jsonb_build_array(jsonb_build_object('op', 'PUT', 'id', g, 'subDomain', 'host' || g, 'fieldType', 'A', 'target', '192.0.2.1', 'ttl', 300)),
                  'before', jsonb_build_array(jsonb_build_object('id', g, 'subDomain', 'host' || g, 'fieldType', 'A', 'target', '192.0.2.2', 'ttl', 300)),
                  'owners', repeat('o', 1100)),
                'done', jsonb_build_object('generation', (g / 10)::text, 'calls', 2),
                at, at + interval '200 milliseconds'
           FROM generate_series($2::bigint, $2::bigint + $3::bigint - 1) g,
                LATERAL (SELECT now() - ($4::float8 - ($4::float8 - $5::float8) * (g - $2::bigint) / $3::float8) * interval '1 day' AS at) s`,
        [tenant.id, from, count, firstDay, lastDay],
      );
    await seed(1, OLD, 400, 31);
    await seed(OLD + 1, NEW, 29.9, 0.01);
    // One applied plan per 20 old rows, referred to by its row.
    await pool.query(
      `WITH p AS (
         INSERT INTO plans (id, tenant_id, requested_by, policy, request, body, digest, base_generations, expires_at, status, applied_at, created_at)
         SELECT 'pl_bench_' || g, $1::bigint, $1::bigint, 'sync', '{}', '{}', 'd', '{}', now(), 'applied', now() - interval '100 days', now() - interval '100 days'
           FROM generate_series(1, $2::bigint / 20) g RETURNING id)
       UPDATE journal j SET plan_id = 'pl_bench_' || (j.id / 20) WHERE j.id % 20 = 0 AND j.id <= $2::bigint`,
      [tenant.id, OLD],
    );
    await pool.query('VACUUM ANALYZE journal');
    await pool.query('VACUUM ANALYZE plans');
    const size = (await pool.query<{ s: string }>(`SELECT pg_size_pretty(pg_total_relation_size('journal')) AS s`)).rows[0]!.s;
    console.log(
      `journal: ${OLD.toLocaleString('en')} rows older than 30 days, ${NEW.toLocaleString('en')} newer, ${size} with its indexes (seeded in ${ms(performance.now() - t)})`,
    );

    const write = async () => {
      const [row] = (
        await pool.query<{ id: string }>(
          `INSERT INTO journal (zone, tenant_id, intent) VALUES ('z1.example', $1::bigint, '{"kind":"changes","names":[],"operations":[]}') RETURNING id::text AS id`,
          [tenant.id],
        )
      ).rows;
      await store.finishJournal(pool, row!.id, 'done', { generation: '1' });
    };
    const read = () => store.listAppliesAfter(pool, 'z3.example', { time: new Date(Date.now() - 3_600_000) });
    const alone = [loop(20, write), loop(200, read)];
    await new Promise((r) => setTimeout(r, 5_000));
    const [writeAlone, readAlone] = await Promise.all(alone.map((l) => l.stop()));

    t = performance.now();
    const dry = await pruneJournal(pool, { olderThanMs: 30 * DAY, dryRun: true });
    const dryMs = performance.now() - t;
    const beside = [loop(20, write), loop(200, read)];
    t = performance.now();
    const r = await pruneJournal(pool, { olderThanMs: 30 * DAY });
    const pruneMs = performance.now() - t;
    const [writeBeside, readBeside] = await Promise.all(beside.map((l) => l.stop()));
    const left = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM journal')).rows[0]!.n);

    console.log(`dry run: ${dry.entries.toLocaleString('en')} entries and ${dry.plans.toLocaleString('en')} plans counted in ${ms(dryMs)}`);
    console.log(
      `prune --older-than 30d: ${r.entries.toLocaleString('en')} entries and ${r.plans.toLocaleString('en')} plans deleted in ${ms(pruneMs)} (${Math.round(r.entries / (pruneMs / 1000)).toLocaleString('en')} rows/s); ${left.toLocaleString('en')} rows left`,
    );
    console.log(`an apply's journal writes (insert + finish), alone:        ${summary(writeAlone)}`);
    console.log(`                                        during the prune: ${summary(writeBeside)}`);
    console.log(`zone at's read of the applies since an hour ago, alone:   ${summary(readAlone)}`);
    console.log(`                                        during the prune: ${summary(readBeside)}`);
    console.log(
      `ratios during / alone: writes p99 ×${(percentile(writeBeside, 99) / percentile(writeAlone, 99)).toFixed(2)}, max ×${(Math.max(...writeBeside) / Math.max(...writeAlone)).toFixed(2)}; reads p99 ×${(percentile(readBeside, 99) / percentile(readAlone, 99)).toFixed(2)}`,
    );
  } finally {
    await pool.end();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
