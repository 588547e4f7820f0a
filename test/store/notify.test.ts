import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen, LISTENER_APPLICATION_NAME, listenZoneChanges, notifyZoneChanged, ZONE_CHANNEL, type ZoneChange } from '../../src/store/notify.js';
import { createTenant, setDisabled, setTokenHash } from '../../src/store/tenants.js';
import { withTransaction } from '../../src/store/transaction.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { until } from '../helpers/until.js';

describe('NOTIFY / LISTEN', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase({ max: 4 });
  });
  afterAll(async () => {
    await db?.drop();
  });

  async function listenerPids(): Promise<number[]> {
    const { rows } = await db.pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`,
      [LISTENER_APPLICATION_NAME],
    );
    return rows.map((r) => r.pid);
  }

  it('delivers zone and generation (bigint, exact) to a listener', async () => {
    const got: [string, bigint][] = [];
    const stop = await listenZoneChanges(db.pool, (zone, generation) => got.push([zone, generation]));
    try {
      await notifyZoneChanged(db.pool, 'a.example', 7n);
      await notifyZoneChanged(db.pool, 'b.example', 9007199254740993n);
      await until('two notifications', () => got.length === 2);
      expect(got).toEqual([
        ['a.example', 7n],
        ['b.example', 9007199254740993n],
      ]);
    } finally {
      await stop();
    }
  });

  it('carries what the generation changed when it fits; past the bound, or malformed, the generation alone', async () => {
    const got: Array<[string, bigint, ZoneChange | undefined]> = [];
    const stop = await listenZoneChanges(db.pool, (zone, generation, changed) => got.push([zone, generation, changed]));
    try {
      const changed: ZoneChange = { ids: ['5000000001', '5000000002'], sets: [{ dnsName: 'www.a.example', recordType: 'A' }] };
      await notifyZoneChanged(db.pool, 'a.example', 3n, changed);
      const huge: ZoneChange = { ids: Array.from({ length: 1_000 }, (_, i) => String(5_000_000_000 + i)), sets: [] };
      await notifyZoneChanged(db.pool, 'a.example', 4n, huge);
      await db.pool.query('SELECT pg_notify($1, $2)', [ZONE_CHANNEL, '{"zone": "a.example", "generation": "5", "changed": {"ids": [1], "sets": []}}']);
      await until('three notifications', () => got.length === 3);
      expect(got).toEqual([
        ['a.example', 3n, changed],
        ['a.example', 4n, undefined],
        ['a.example', 5n, undefined],
      ]);
    } finally {
      await stop();
    }
  });

  it('carries a change just within the bound; one far past it goes without being written whole first', async () => {
    const got: Array<[string, bigint, ZoneChange | undefined]> = [];
    const stop = await listenZoneChanges(db.pool, (zone, generation, changed) => got.push([zone, generation, changed]));
    try {
      const near: ZoneChange = { ids: [], sets: [] };
      const payload = () => JSON.stringify({ zone: 'a.example', generation: '7', changed: { ids: [], sets: near.sets.map((s) => [s.dnsName, s.recordType]) } });
      while (payload().length < 6_980) near.sets.push({ dnsName: `h${near.sets.length}.a.example`, recordType: 'A' });
      near.sets.pop();
      await notifyZoneChanged(db.pool, 'a.example', 7n, near);
      // 25,000 sets (a TXT-registry import): the sets past the first thousand are never read.
      const sets = Array.from({ length: 25_000 }, (_, i) =>
        i < 1_000
          ? { dnsName: `h${i}.a.example`, recordType: 'A' }
          : {
              get dnsName(): string {
                throw new Error(`set ${i} read`);
              },
              recordType: 'A',
            },
      );
      await notifyZoneChanged(db.pool, 'a.example', 8n, { ids: [], sets });
      await until('two notifications', () => got.length === 2);
      expect(got).toEqual([
        ['a.example', 7n, near],
        ['a.example', 8n, undefined],
      ]);
    } finally {
      await stop();
    }
  });

  it('delivers at COMMIT, never on ROLLBACK', async () => {
    const got: string[] = [];
    const stop = await listenZoneChanges(db.pool, (zone) => got.push(zone));
    try {
      await withTransaction(db.pool, async (tx) => {
        await notifyZoneChanged(tx, 'rolled.example', 1n);
        throw new Error('rollback');
      }).catch(() => undefined);
      await withTransaction(db.pool, async (tx) => {
        await notifyZoneChanged(tx, 'committed.example', 2n);
        await new Promise((r) => setTimeout(r, 50));
        expect(got).toEqual([]); // not before COMMIT
      });
      await until('the committed notification', () => got.length === 1);
      await new Promise((r) => setTimeout(r, 50));
      expect(got).toEqual(['committed.example']);
    } finally {
      await stop();
    }
  });

  it('ignores foreign or malformed payloads on the channel, and survives a throwing handler', async () => {
    const got: string[] = [];
    const errors: unknown[] = [];
    const stop = await listenZoneChanges(
      db.pool,
      (zone) => {
        got.push(zone);
        if (zone === 'throws.example') throw new Error('handler bug');
      },
      { onError: (e) => errors.push(e) },
    );
    try {
      await db.pool.query('SELECT pg_notify($1, $2)', [ZONE_CHANNEL, 'not json']);
      await db.pool.query('SELECT pg_notify($1, $2)', [ZONE_CHANNEL, '{"zone": 1}']);
      await db.pool.query('SELECT pg_notify($1, $2)', [ZONE_CHANNEL, '{"zone": "x.example", "generation": "abc"}']);
      await notifyZoneChanged(db.pool, 'throws.example', 1n);
      await notifyZoneChanged(db.pool, 'after.example', 2n);
      await until('valid notifications', () => got.length === 2);
      expect(got).toEqual(['throws.example', 'after.example']);
      expect(errors).toHaveLength(1);
    } finally {
      await stop();
    }
  });

  it('reconnects after its connection is killed, and stop() ends it', async () => {
    const got: string[] = [];
    let reconnects = 0;
    const stop = await listenZoneChanges(db.pool, (zone) => got.push(zone), {
      onReconnect: () => {
        reconnects++;
      },
      onError: () => undefined,
      retryDelayMs: 20,
    });
    try {
      const [pid] = await listenerPids();
      expect(pid).toBeGreaterThan(0);
      await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
      await until('a reconnect', () => reconnects === 1);
      const after = await listenerPids();
      expect(after).toHaveLength(1);
      expect(after[0]).not.toBe(pid);
      await notifyZoneChanged(db.pool, 'back.example', 3n);
      await until('a notification after the reconnect', () => got.includes('back.example'));
    } finally {
      await stop();
    }
    await until('the listener connection to close', async () => (await listenerPids()).length === 0);
    await notifyZoneChanged(db.pool, 'stopped.example', 4n);
    await new Promise((r) => setTimeout(r, 100));
    expect(got).not.toContain('stopped.example');
  });

  it('does not use a pool slot', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    const stop = await listenZoneChanges(pool, () => undefined);
    try {
      const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
      expect(rows).toEqual([{ one: 1 }]);
      expect(pool.totalCount).toBe(1);
    } finally {
      await stop();
      await pool.end();
    }
  });

  it('rejects when it cannot connect at all', async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', max: 1 });
    await expect(listenZoneChanges(pool, () => undefined)).rejects.toThrow();
    await pool.end();
  });

  it('delivers the name of a tenant created, whose token is rotated or who is disabled, and only at commit', async () => {
    const got: string[] = [];
    const l = await listen(db.pool, { tenant: (name) => got.push(name) });
    try {
      await createTenant(db.pool, { name: 'noisy', tokenSha256: Buffer.alloc(32, 1), scopes: [], zones: ['a.example'], suffixes: [] });
      await withTransaction(db.pool, async (tx) => {
        await setDisabled(tx, 'noisy', true);
        throw new Error('rolled back');
      }).catch(() => undefined);
      await setTokenHash(db.pool, 'noisy', Buffer.alloc(32, 2));
      await setDisabled(db.pool, 'noisy', true);
      await until('three tenant notifications', () => got.length === 3);
      expect(got).toEqual(['noisy', 'noisy', 'noisy']);
    } finally {
      await l.stop();
    }
  });

  it('notices a connection that went silent through its heartbeat, and comes back', async () => {
    // A TCP relay to Postgres that can stop relaying without closing anything (a dropped route).
    const target = new URL(db.url);
    const relays: Array<{ frozen: boolean }> = [];
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      const relay = { frozen: false };
      relays.push(relay);
      client.on('data', (d) => relay.frozen || upstream.write(d));
      upstream.on('data', (d) => relay.frozen || client.write(d));
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const via = new URL(db.url);
    via.hostname = '127.0.0.1';
    via.port = String((proxy.address() as net.AddressInfo).port);
    const pool = new pg.Pool({ connectionString: via.toString(), max: 1 });
    let lost = 0;
    let reconnects = 0;
    const got: string[] = [];
    const l = await listen(
      pool,
      { zone: (zone) => got.push(zone) },
      {
        heartbeatMs: 50,
        retryDelayMs: 20,
        onLost: () => lost++,
        onReconnect: () => reconnects++,
        onError: () => undefined,
      },
    );
    try {
      expect(l.live()).toBe(true);
      for (const r of relays) r.frozen = true;
      // Counted as lost (onLost), whether or not a poll here catches the moment it is not live: on a busy
      // machine the reconnect (20 ms later) can come before the next look, and live() is true again.
      await until('the silent connection to count as lost', () => lost === 1);
      await until('a new connection', () => reconnects === 1 && l.live());
      expect(lost).toBe(1);
      await notifyZoneChanged(db.pool, 'after-silence.example', 1n);
      await until('a notification on the new connection', () => got.includes('after-silence.example'));
    } finally {
      await l.stop();
      await pool.end();
      for (const r of relays) r.frozen = false;
      await new Promise((r) => proxy.close(() => r(undefined)));
    }
  });

  it('does not count a heartbeat as lost while the event loop was held (its answer waits on the socket)', async () => {
    let lost = 0;
    const l = await listen(db.pool, { zone: () => undefined }, { heartbeatMs: 50, onLost: () => lost++, onError: () => undefined });
    try {
      for (let round = 0; round < 4; round++) {
        // A heartbeat in flight, then the loop held for many of its deadlines (a long synchronous task).
        await new Promise((r) => setTimeout(r, 60));
        const until = performance.now() + 400;
        while (performance.now() < until) {
          // busy
        }
        expect(l.live()).toBe(true);
      }
      // Beats go on after the loop is free again, and all are answered.
      await new Promise((r) => setTimeout(r, 300));
      expect(lost).toBe(0);
      expect(l.live()).toBe(true);
    } finally {
      await l.stop();
    }
  });
});
