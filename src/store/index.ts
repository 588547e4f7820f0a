/**
 * The store: Postgres only. All of dnsplane's SQL lives in this folder.
 * Every table function takes a Queryable (a Pool, or a client inside a transaction) first.
 */
export { openDatabase, redactUrl, describeUrl, createSidePool, EMBEDDED_DATABASE, EMBEDDED_USER, CONNECTION_FILE } from './db.js';
export type { Database, OpenDatabaseOptions, Queryable, LogFn } from './db.js';
export { migrate, loadMigrations, checkSchema, MIGRATIONS_DIR, MIGRATION_LOCK_KEY, OLDEST_COMPATIBLE_SCHEMA, RELEASE } from './migrate.js';
export type { Migration, SchemaCheck, SchemaRelease } from './migrate.js';
export { withZoneLock, tryZoneLock, tryJobLock, onZoneLockEnded, lockSession, checkLockHeld, ZONE_LOCK_NAMESPACE, JOB_LOCK_NAMESPACE } from './lock.js';
export type { LockSession } from './lock.js';
export { withTransaction, withSnapshot, ping, savepoint, rollbackToSavepoint, releaseSavepoint } from './transaction.js';
export {
  StoreError,
  AlreadyExistsError,
  NotFoundError,
  ConflictError,
  LockTimeoutError,
  TransactionAbortedError,
  ZoneLockLostError,
  isDatabaseUnavailable,
} from './errors.js';
export type { JsonValue } from './internal.js';
export * from './tenants.js';
export * from './zones.js';
export * from './records.js';
export * from './ownership.js';
export * from './plans.js';
export * from './journal.js';
export * from './notify.js';
export * from './demo.js';
export * from './sealed.js';
export * from './sealed-keys.js';
export * from './ovh-drafts.js';
export * from './visibility.js';
export * from './recent-publishes.js';
export * from './ovh-budget.js';
export * from './health.js';
export * from './withdrawals.js';
export * from './protected-names.js';
export * from './journal-prune.js';
export * from './workload-trust.js';
export * from './ovh-accounts.js';
export { withZoneLocks } from './lock.js';
export * from './lifecycle.js';
export * from './write-quota.js';
