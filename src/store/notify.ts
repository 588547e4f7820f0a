/**
 * Cross-replica cache hints: NOTIFY on channel dnsplane_zone with {"zone": …, "generation": "…"}.
 * A hint only — notifications are lost while a listener reconnects; readers fall back to polling
 * zones.generation (onReconnect is the moment to do so).
 */
import pg from 'pg';
import { type Queryable } from './internal.js';

export const ZONE_CHANNEL = 'dnsplane_zone';

/** Inside a transaction the notification is delivered at COMMIT (and dropped on ROLLBACK). */
export async function notifyZoneChanged(q: Queryable, zone: string, generation: bigint): Promise<void> {
  await q.query('SELECT pg_notify($1, $2)', [ZONE_CHANNEL, JSON.stringify({ zone, generation: generation.toString() })]);
}

export interface ListenOptions {
  /** Connection errors and exceptions thrown by onChange. */
  onError?: (err: unknown) => void;
  /** Called after a lost connection is re-established (notifications may have been missed). */
  onReconnect?: () => void;
  /** First retry delay; doubles up to maxRetryDelayMs. Defaults 100 ms / 5 s. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
}

/**
 * Listens on a dedicated connection (not taken from the pool, built from its options), and
 * reconnects with backoff when it breaks. Resolves once listening; returns a stop function.
 */
export async function listenZoneChanges(
  pool: pg.Pool,
  onChange: (zone: string, generation: bigint) => void,
  opts: ListenOptions = {},
): Promise<() => Promise<void>> {
  const firstDelay = opts.retryDelayMs ?? 100;
  const maxDelay = opts.maxRetryDelayMs ?? 5_000;
  let delay = firstDelay;
  let stopped = false;
  let current: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;

  const report = (err: unknown): void => {
    try {
      opts.onError?.(err);
    } catch {
      // a failing error handler must not break the listener
    }
  };

  const onNotification = (msg: pg.Notification): void => {
    if (msg.channel !== ZONE_CHANNEL || msg.payload === undefined) return;
    let zone: string;
    let generation: bigint;
    try {
      const value: unknown = JSON.parse(msg.payload);
      if (
        typeof value !== 'object' || value === null ||
        !('zone' in value) || typeof value.zone !== 'string' ||
        !('generation' in value) || typeof value.generation !== 'string'
      ) {
        return;
      }
      zone = value.zone;
      generation = BigInt(value.generation);
    } catch {
      return; // not ours / malformed
    }
    try {
      onChange(zone, generation);
    } catch (err) {
      report(err);
    }
  };

  const connect = async (): Promise<void> => {
    const client = new pg.Client({ ...pool.options, keepAlive: true });
    const lost = (err?: unknown): void => {
      if (err !== undefined) report(err);
      if (client !== current) return;
      current = undefined;
      client.end().catch(() => undefined);
      schedule();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', onNotification);
    try {
      await client.connect();
      await client.query(`LISTEN ${ZONE_CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      client.end().catch(() => undefined);
      throw err;
    }
    if (stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    current = client;
    delay = firstDelay;
  };

  const schedule = (): void => {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (stopped) return;
      connect().then(
        () => {
          if (!stopped) opts.onReconnect?.();
        },
        (err: unknown) => {
          report(err);
          schedule();
        },
      );
    }, delay);
    delay = Math.min(delay * 2, maxDelay);
  };

  await connect();

  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    timer = undefined;
    const client = current;
    current = undefined;
    if (client) await client.end().catch(() => undefined);
  };
}
