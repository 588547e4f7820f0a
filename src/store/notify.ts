/**
 * Cross-replica notifications. Channel dnsplane_zone carries {"zone": …, "generation": "…"} at each
 * commit that moves a zone's generation (a hint: Records checks generations in Postgres, see
 * core/reads/read-cache.ts), with "changed": {"ids": […], "sets": [[name, type], …]} when an apply knows
 * exactly what that generation changed (core/reads/zone-memory.ts catches up on it); channel dnsplane_tenant carries a tenant's name when its credentials change —
 * its token rotated, it disabled or enabled (store/tenants.ts), one of its TSIG or OVH keys created,
 * rotated or deleted (store/sealed-keys.ts), sent in the same statement — so that every replica drops the
 * tokens and keys it cached (core/keys/cache.ts). Channel dnsplane_probe carries a probe's id when an apply's refresh
 * recorded it, dnsplane_visibility a journal row's id when its visibility became final
 * (store/visibility.ts): the prober and the waits of core/visibility/visibility.ts. Notifications are lost while a listener reconnects: whoever relies on
 * them must stop trusting its memory when the connection is lost (onLost) and start afresh once it
 * is back (onReconnect).
 */
import pg from 'pg';
import type { Queryable } from './internal.js';

export const ZONE_CHANNEL = 'dnsplane_zone';
export const TENANT_CHANNEL = 'dnsplane_tenant';
/** A probe recorded (store/visibility.ts): its id. Every replica's prober hears it; its holder runs it. */
export const PROBE_CHANNEL = 'dnsplane_probe';
/** A journal row's visibility became final (store/visibility.ts): its id. waitVisible hears it. */
export const VISIBILITY_CHANNEL = 'dnsplane_visibility';
/** An OVH account added, rotated, disabled, enabled or removed (store/ovh-accounts.ts): its name. */
export const ACCOUNT_CHANNEL = 'dnsplane_account';
/** The listener's application_name, to find its backend in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'dnsplane-listener';

/**
 * What one generation of a zone changed, when the writer knows it exactly (an apply's member): the
 * ids of the records it wrote or deleted, and the record sets whose ownership rows it wrote. Another
 * replica's view of the zone (core/reads/zone-memory.ts) re-reads only these to catch up.
 */
export interface ZoneChange {
  ids: string[];
  sets: Array<{ dnsName: string; recordType: string }>;
}

/** A payload past this many bytes goes without its change (NOTIFY's limit is 8,000). */
const MAX_CHANGE_PAYLOAD = 7_000;

/**
 * Inside a transaction the notification is delivered at COMMIT (and dropped on ROLLBACK). `changed`:
 * what this generation changed, carried when it fits (a listener without it knows only the generation).
 */
export async function notifyZoneChanged(q: Queryable, zone: string, generation: bigint, changed?: ZoneChange): Promise<void> {
  const bare = { zone, generation: generation.toString() };
  const full = changed && changePayload(bare, changed);
  await q.query('SELECT pg_notify($1, $2)', [ZONE_CHANNEL, full !== undefined && Buffer.byteLength(full) <= MAX_CHANGE_PAYLOAD ? full : JSON.stringify(bare)]);
}

/**
 * The payload naming `changed`, or undefined once its items alone pass MAX_CHANGE_PAYLOAD: a change
 * of 25,000 sets (a TXT-registry import) is not written whole only to be found too long.
 */
function changePayload(bare: { zone: string; generation: string }, changed: ZoneChange): string | undefined {
  // Each item costs at least its characters and a comma; the whole is measured once it may fit.
  let chars = 0;
  for (const id of changed.ids) if ((chars += id.length + 3) > MAX_CHANGE_PAYLOAD) return undefined;
  const sets: Array<[string, string]> = [];
  for (const s of changed.sets) {
    if ((chars += s.dnsName.length + s.recordType.length + 8) > MAX_CHANGE_PAYLOAD) return undefined;
    sets.push([s.dnsName, s.recordType]);
  }
  return JSON.stringify({ ...bare, changed: { ids: changed.ids, sets } });
}

export interface ListenOptions {
  /** Connection errors and exceptions thrown by onChange. */
  onError?: (err: unknown) => void;
  /** Called after a lost connection is re-established (notifications may have been missed). */
  onReconnect?: () => void;
  /** Called as soon as the connection is known lost (before any reconnect attempt). */
  onLost?: () => void;
  /** First retry delay; doubles up to maxRetryDelayMs. Defaults 100 ms / 5 s. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /**
   * Every heartbeatMs, a `SELECT 1` on the listening connection; one that fails, or is not answered
   * within 2 × heartbeatMs of time this process could have read the answer in, counts as a lost
   * connection, so a connection dropped silently (a firewall, a NAT that forgets idle connections) is
   * noticed within 3 × heartbeatMs. Time the event loop was held does not count: a heartbeat whose
   * deadline passed while the loop was busy gets another one, and a deadline is judged only after the
   * loop has read what arrived (an answer waiting on the socket is not a lost connection). Default: none.
   */
  heartbeatMs?: number;
}

export interface ListenHandlers {
  /** `changed`: what that generation changed, when its writer said (store.ZoneChange). */
  zone?: (zone: string, generation: bigint, changed?: ZoneChange) => void;
  tenant?: (name: string) => void;
  /** A probe recorded (its id). */
  probe?: (id: string) => void;
  /** A journal row's visibility became final (its id). */
  visibility?: (journalId: string) => void;
  /** An OVH account changed (its name). */
  account?: (name: string) => void;
}

export interface Listener {
  /**
   * Connected, and (with a heartbeat) no heartbeat past its deadline: what it has delivered can be
   * trusted to be all that was committed, but for the last instants.
   */
  live(): boolean;
  stop(): Promise<void>;
}

/**
 * listen() for zone changes only; resolves once listening, returns a stop function.
 */
export async function listenZoneChanges(
  pool: pg.Pool,
  onChange: (zone: string, generation: bigint, changed?: ZoneChange) => void,
  opts: ListenOptions = {},
): Promise<() => Promise<void>> {
  const l = await listen(pool, { zone: onChange }, opts);
  return () => l.stop();
}

/** A payload's `changed`, if well-formed (else nothing: the listener knows only the generation). */
function parseChange(v: unknown): { changed?: ZoneChange } {
  if (typeof v !== 'object' || v === null || !('ids' in v) || !('sets' in v)) return {};
  const { ids, sets } = v;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) return {};
  if (!Array.isArray(sets) || !sets.every((x) => Array.isArray(x) && x.length === 2 && typeof x[0] === 'string' && typeof x[1] === 'string')) return {};
  return { changed: { ids: ids as string[], sets: (sets as Array<[string, string]>).map(([dnsName, recordType]) => ({ dnsName, recordType })) } };
}

function parseZone(payload: string): { zone: string; generation: bigint; changed?: ZoneChange } | undefined {
  try {
    const value: unknown = JSON.parse(payload);
    if (
      typeof value !== 'object' ||
      value === null ||
      !('zone' in value) ||
      typeof value.zone !== 'string' ||
      !('generation' in value) ||
      typeof value.generation !== 'string'
    ) {
      return undefined;
    }
    return { zone: value.zone, generation: BigInt(value.generation), ...('changed' in value ? parseChange(value.changed) : {}) };
  } catch {
    return undefined; // not ours / malformed
  }
}

/**
 * Listens on a dedicated connection (not taken from the pool, built from its options), and
 * reconnects with backoff when it breaks. Resolves once listening.
 */
export async function listen(pool: pg.Pool, handlers: ListenHandlers, opts: ListenOptions = {}): Promise<Listener> {
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

  const deliver = (fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      report(err);
    }
  };

  const onNotification = (msg: pg.Notification): void => {
    if (msg.payload === undefined) return;
    if (msg.channel === ZONE_CHANNEL && handlers.zone) {
      const z = parseZone(msg.payload);
      if (z) deliver(() => handlers.zone!(z.zone, z.generation, z.changed));
    } else if (msg.channel === TENANT_CHANNEL && handlers.tenant) {
      const name = msg.payload;
      deliver(() => handlers.tenant!(name));
    } else if (msg.channel === PROBE_CHANNEL && handlers.probe) {
      const id = msg.payload;
      deliver(() => handlers.probe!(id));
    } else if (msg.channel === VISIBILITY_CHANNEL && handlers.visibility) {
      const id = msg.payload;
      deliver(() => handlers.visibility!(id));
    } else if (msg.channel === ACCOUNT_CHANNEL && handlers.account) {
      const name = msg.payload;
      deliver(() => handlers.account!(name));
    }
  };

  const heartbeatMs = opts.heartbeatMs;
  let beat: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const client = new pg.Client({ ...pool.options, keepAlive: true, application_name: LISTENER_APPLICATION_NAME });
    const lost = (err?: unknown): void => {
      if (err !== undefined) report(err);
      if (client !== current) return;
      current = undefined;
      clearInterval(beat);
      beat = undefined;
      client.end().catch(() => undefined);
      deliver(() => opts.onLost?.());
      schedule();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', onNotification);
    try {
      await client.connect();
      await client.query(`LISTEN ${ZONE_CHANNEL}`);
      await client.query(`LISTEN ${TENANT_CHANNEL}`);
      if (handlers.probe) await client.query(`LISTEN ${PROBE_CHANNEL}`);
      if (handlers.visibility) await client.query(`LISTEN ${VISIBILITY_CHANNEL}`);
      if (handlers.account) await client.query(`LISTEN ${ACCOUNT_CHANNEL}`);
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
    if (heartbeatMs !== undefined) {
      let pending = false;
      beat = setInterval(() => {
        if (pending || client !== current) return;
        pending = true;
        let answered = false;
        client.query('SELECT 1').then(
          () => {
            answered = true;
            pending = false;
          },
          (err: unknown) => {
            answered = true;
            pending = false;
            lost(err);
          },
        );
        const deadlineMs = 2 * heartbeatMs;
        const judge = (armedAt: number): void => {
          const timer = setTimeout(() => {
            // A deadline passed mostly while the loop was held (this timer fired late): another one.
            if (performance.now() - armedAt > deadlineMs * 1.5) return judge(performance.now());
            // Judged once the loop has read what arrived: an answer on the socket is read in the poll
            // phase, which runs after this timer and before setImmediate.
            setImmediate(() => {
              if (answered || client !== current) return;
              pending = false;
              lost(new Error(`listener heartbeat: no answer within ${deadlineMs} ms`));
            });
          }, deadlineMs);
          timer.unref();
        };
        judge(performance.now());
      }, heartbeatMs);
      beat.unref();
    }
  };

  const schedule = (): void => {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (stopped) return;
      connect().then(
        () => {
          if (!stopped) deliver(() => opts.onReconnect?.());
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

  return {
    live: () => current !== undefined,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      clearInterval(beat);
      beat = undefined;
      const client = current;
      current = undefined;
      if (client) await client.end().catch(() => undefined);
    },
  };
}
