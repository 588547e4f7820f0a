/**
 * Upgrades that say what they are (issue 31.7): the migrator records the newest schema, the oldest
 * schema a replica must know to run on it, and the release that migrated it. Code older than the
 * schema (a rolling upgrade's old replicas, or a downgrade) is told `older` — it serves and says so at
 * start and in /readyz — or `refused` when newer code marked it too old; an older replica's migrate()
 * never lowers what newer code required.
 */
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSchema, loadMigrations, migrate, MIGRATIONS_DIR, OLDEST_COMPATIBLE_SCHEMA, RELEASE } from '../../src/store/migrate.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { startServerOn } from '../helpers/sim-server.js';

let db: TestDatabase;
let newest: string;
/** The migrations of a release that knows up to, and including, `last`. */
const olderDirs: string[] = [];
function olderCode(last: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-older-'));
  for (const f of readdirSync(MIGRATIONS_DIR)) if (f.endsWith('.sql') && f.slice(0, 4) <= last) cpSync(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
  olderDirs.push(dir);
  return dir;
}

beforeAll(async () => {
  db = await testDatabase();
  newest = (await loadMigrations()).at(-1)!.version;
});

afterAll(async () => {
  await db?.drop();
  for (const d of olderDirs) rmSync(d, { recursive: true, force: true });
});

describe('schema_release', () => {
  it('records the newest schema, the oldest a replica must know, and the release that migrated it', async () => {
    await migrate(db.pool);
    const check = await checkSchema(db.pool);
    expect(check).toMatchObject({
      state: 'current',
      known: newest,
      release: { schema: newest, oldestCompatible: OLDEST_COMPATIBLE_SCHEMA, migratedBy: RELEASE },
    });
    expect(check.message).toBe(`schema ${newest}, known to this release (${RELEASE})`);
  });

  it('code older than the schema but not older than the oldest allowed is told older, and its migrate() changes nothing', async () => {
    const before = (await db.pool.query('SELECT * FROM schema_release')).rows;
    const older = olderCode(OLDEST_COMPATIBLE_SCHEMA);
    const unknown = (await loadMigrations()).filter((m) => m.version > OLDEST_COMPATIBLE_SCHEMA).map((m) => m.version);
    expect(unknown.length).toBeGreaterThan(0); // this release's migrations after the oldest allowed
    expect(await migrate(db.pool, { dir: older })).toEqual({ applied: [] });
    expect((await db.pool.query('SELECT * FROM schema_release')).rows).toEqual(before);
    const check = await checkSchema(db.pool, { dir: older });
    expect(check.state).toBe('older');
    expect(check.message).toBe(
      `this replica (release ${RELEASE}, schema up to ${OLDEST_COMPATIBLE_SCHEMA}) is older than the database: release ${RELEASE} migrated it to schema ${newest} (migrations ${unknown.join(', ')} are unknown here); it may serve until it is upgraded`,
    );
  });

  it('code older than the oldest schema allowed is refused, naming what to run', async () => {
    const tooOld = olderCode('0013');
    const check = await checkSchema(db.pool, { dir: tooOld });
    expect(check.state).toBe('refused');
    expect(check.message).toMatch(
      new RegExp(
        `^this replica \\(release .*, schema up to 0013\\) is too old for the database: release .* migrated it to schema ${newest} and requires replicas that know schema ${OLDEST_COMPATIBLE_SCHEMA} or newer \\(migrations .* are unknown here\\)\\. Run the newer image$`,
      ),
    );
  });

  it('a server on a schema newer than it knows serves and says so in /readyz; one marked too old does not start', async () => {
    const sim = await OvhSimulator.start({ zones: { 'release.test': [] } });
    try {
      // A newer release migrated the database: a migration this code does not know.
      await db.pool.query(`INSERT INTO schema_migrations (version, name, checksum) VALUES ('9998', 'future', 'x')`);
      await db.pool.query(`UPDATE schema_release SET schema = '9998', migrated_by = '9.9.9'`);
      const server = await startServerOn(sim, db.url, { DNSPLANE_ZONES: 'release.test', DNSPLANE_DRIFT_INTERVAL: 'off' });
      try {
        const ready = await fetch(`${server.url}/readyz`);
        expect(ready.status).toBe(200);
        expect(await ready.text()).toBe(
          `ready\nthis replica (release ${RELEASE}, schema up to ${newest}) is older than the database: release 9.9.9 migrated it to schema 9998 (migrations 9998 are unknown here); it may serve until it is upgraded\n`,
        );
      } finally {
        await server.close();
      }
      await db.pool.query(`UPDATE schema_release SET oldest_compatible = '9998'`);
      await expect(startServerOn(sim, db.url, { DNSPLANE_ZONES: 'release.test', DNSPLANE_DRIFT_INTERVAL: 'off' })).rejects.toThrow(
        /is too old for the database: release 9\.9\.9 migrated it to schema 9998 and requires replicas that know schema 9998 or newer/,
      );
    } finally {
      await db.pool.query(`DELETE FROM schema_migrations WHERE version = '9998'`);
      await sim.stop();
    }
  });
});
