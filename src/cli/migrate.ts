import * as store from '../store/index.js';
import { configFrom, type Command } from './command.js';

export const migrateCommand: Command = {
  summary: 'apply database migrations and exit',
  help: `Usage: dnsplane migrate

Applies the database migrations that are missing (DATABASE_URL, or the embedded Postgres under
DNSPLANE_DATA_DIR; while \`dnsplane serve\` runs on it, through the connection file the server
keeps there). Safe to run while servers start: migrations take a database-wide lock.`,
  async run(_args, io) {
    const cfg = configFrom(io);
    const db = await store.openDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, shareRunning: true });
    try {
      const { applied } = await store.migrate(db.pool);
      io.out(applied.length ? `applied: ${applied.join(', ')}` : 'the database is up to date');
      return 0;
    } finally {
      await db.close();
    }
  },
};

/** Opens the configured database, migrated, for a command that works on it directly. */
export async function withDatabase<T>(io: Parameters<typeof configFrom>[0], fn: (db: store.Database) => Promise<T>): Promise<T> {
  const cfg = configFrom(io);
  const db = await store.openDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir, shareRunning: true });
  try {
    await store.migrate(db.pool);
    return await fn(db);
  } finally {
    await db.close();
  }
}
