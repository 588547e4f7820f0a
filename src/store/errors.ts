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

/**
 * The row to read or change does not exist (or a foreign key points nowhere): `what` (tenant, zone,
 * plan, journal entry) and its key. dnsplane's one not-found error: core throws it too (core/errors.ts
 * hands it on), with a message of its own, and the API answers it NotFound wherever it comes from.
 */
export class NotFoundError extends StoreError {
  override readonly name = 'NotFoundError';
  constructor(
    readonly what: string,
    readonly key: string,
    message = `${what} ${JSON.stringify(key)} not found`,
  ) {
    super(message);
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
    /** Who holds it, when the caller knows better than "another apply". */
    holder = 'another apply holds it',
  ) {
    super(`zone ${JSON.stringify(zone)}: lock not acquired within ${timeoutMs} ms (${holder})`);
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

/**
 * The zone lock of a transaction is gone: its session ended (terminated backend, a restart, a
 * failover, a cut connection) or it no longer answers. Postgres released the lock when the session
 * went, so another holder may have it now: the holder must stop writing.
 */
export class ZoneLockLostError extends StoreError {
  override readonly name = 'ZoneLockLostError';
  constructor(
    readonly zone: string,
    readonly reason: string,
  ) {
    super(`zone ${JSON.stringify(zone)}: the zone lock was lost (${reason})`);
  }
}

/** SQLSTATEs and driver errors that mean "the database is unreachable, restarting or failing over". */
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'not queryable',
  'timeout exceeded when trying to connect',
  'terminating connection',
  'the database system is',
  'Client was closed',
  'Query read timeout',
];

/**
 * Whether an error means the database is unreachable, restarting or failing over (a retryable
 * outage), as opposed to a bug or bad input. Matches SQLSTATE class 08 (connection exception),
 * 57P01-57P03 (shutdown, crash, cannot connect now), 53300 (too many connections), the socket errors
 * of an unreachable server, pg's "Connection terminated" family, and ZoneLockLostError.
 */
export function isDatabaseUnavailable(e: unknown): boolean {
  if (e instanceof ZoneLockLostError) return true;
  if (typeof e !== 'object' || e === null) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_CODES.has(code) || UNAVAILABLE_NODE_CODES.has(code))) return true;
  const message = (e as { message?: unknown }).message;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => message.includes(m))) return true;
  const cause = (e as { cause?: unknown }).cause;
  if (cause !== undefined && cause !== e) return isDatabaseUnavailable(cause);
  // AggregateError (e.g. ECONNREFUSED on both ::1 and 127.0.0.1)
  const errors = (e as { errors?: unknown }).errors;
  return Array.isArray(errors) && errors.some((x) => isDatabaseUnavailable(x));
}
