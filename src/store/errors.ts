/**
 * Typed errors of the store. Everything else surfaces as the driver's `pg.DatabaseError`.
 */

export class StoreError extends Error {
  override readonly name: string = 'StoreError';
}

/** A unique key already exists (e.g. a tenant name, a token hash). */
export class AlreadyExistsError extends StoreError {
  override readonly name = 'AlreadyExistsError';
  constructor(
    readonly what: string,
    readonly key: string,
  ) {
    super(`${what} ${JSON.stringify(key)} already exists`);
  }
}

/** The row to read or change does not exist (or a foreign key points nowhere). */
export class NotFoundError extends StoreError {
  override readonly name = 'NotFoundError';
  constructor(
    readonly what: string,
    readonly key: string,
  ) {
    super(`${what} ${JSON.stringify(key)} not found`);
  }
}

/** The row exists but is not in a state that allows the change (e.g. finishing a finished journal row). */
export class ConflictError extends StoreError {
  override readonly name = 'ConflictError';
}

/** The zone advisory lock was not acquired within lock_timeout (SQLSTATE 55P03). */
export class LockTimeoutError extends StoreError {
  override readonly name = 'LockTimeoutError';
  constructor(
    readonly zone: string,
    readonly timeoutMs: number,
  ) {
    super(`zone ${JSON.stringify(zone)}: lock not acquired within ${timeoutMs} ms (another apply holds it)`);
  }
}

/**
 * COMMIT found the transaction already aborted: a statement inside it failed and its error was
 * caught. Postgres rolled everything back.
 */
export class TransactionAbortedError extends StoreError {
  override readonly name = 'TransactionAbortedError';
  constructor() {
    super('transaction rolled back at COMMIT: a statement inside it failed earlier (its error was caught)');
  }
}
