/**
 * The zones' current generations as a replica knows them (core/reads/read-cache.ts asks them of every
 * Records request): FreshRead shares one read among the callers that arrived while it waited, and
 * ZoneStateSource keeps them in memory while the LISTEN connection is live (docs/records-and-reads.md).
 */
import type * as store from '../../store/index.js';

/**
 * Coalesces a read: get() resolves with the result of a read that started at or after the call.
 * While one read runs, every new caller waits for the next one, which starts when it ends: at most
 * one read runs at a time and each caller waits at most about two reads.
 *
 * The next read starts in the check phase after the current one ends (setImmediate), not in the
 * microtask that sees it end: requests whose bytes arrived in the same turn of the event loop as the
 * read's answer are handled first and share it, instead of each waiting for a read of its own
 * (under load that halves the reads per request; a caller waits at most one more loop turn).
 */
export class FreshRead<T> {
  private running: Promise<T> | undefined;
  private queued: Promise<T> | undefined;
  /** Reads started (for tests and metrics). */
  reads = 0;

  constructor(private readonly read: () => Promise<T>) {}

  get(): Promise<T> {
    // A queued read has not started yet: it is fresh for this caller too.
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    const after = this.running.then(
      () => new Promise<void>((resolve) => setImmediate(resolve)),
      () => new Promise<void>((resolve) => setImmediate(resolve)),
    );
    this.queued = after.then(() => {
      this.queued = undefined;
      return this.start();
    });
    return this.queued;
  }

  private start(): Promise<T> {
    this.reads++;
    const p: Promise<T> = this.read().finally(() => {
      if (this.running === p) this.running = undefined;
    });
    this.running = p;
    return p;
  }
}

type States = Map<string, store.ZoneGeneration>;

/**
 * The current generation and state of every zone, as this replica knows them (issue 28: a
 * not-modified poll without a query of its own).
 *
 * While `trusted()` says the LISTEN connection is live (store/notify.ts: connected, no heartbeat past
 * its deadline), the zones' states are kept in memory: read from Postgres once, then
 * moved by every `NOTIFY dnsplane_zone` (heard) and by every base read from a committed snapshot. A
 * change committed on another replica is seen once its NOTIFY arrived here; the replica that made a
 * change sees it at once, since each zone lock's transaction that ends here (store.onZoneLockEnded:
 * every generation bump is made under one) makes the next caller read Postgres. Otherwise —
 * the listener lost or silent, or not yet read since it came back, or a NOTIFY of a zone it does not
 * hold as synced (a new zone, a first sync) — every caller gets a fresh read (FreshRead: shared, never
 * one that started before the caller arrived), as before. `fresh()` forces one (a caller that says it
 * has a generation newer than the one known here: core/records/records.ts).
 */
export class ZoneStateSource {
  private readonly read: FreshRead<States>;
  /** The states, when trusted (undefined: the next caller reads Postgres). */
  private known: States | undefined;
  /** The highest generation heard of each zone (NOTIFY, a snapshot's read): committed, so always safe to move to. */
  private readonly heardMax = new Map<string, bigint>();
  /** Bumped when the listener is lost or back, and when a zone lock ended here: a read in flight across it is not kept. */
  private epoch = 0;

  constructor(
    readStates: () => Promise<store.ZoneGeneration[]>,
    private readonly trusted: () => boolean = () => false,
  ) {
    this.read = new FreshRead(async () => {
      const epoch = this.epoch;
      const states: States = new Map((await readStates()).map((z) => [z.name, z]));
      if (epoch === this.epoch && this.trusted()) this.known = this.merged(states);
      return states;
    });
  }

  /** Fresh reads started (tests and metrics). */
  get reads(): number {
    return this.read.reads;
  }

  /** The states kept in memory, when they may be trusted now; undefined: read them (get, fresh). */
  now(): ReadonlyMap<string, store.ZoneGeneration> | undefined {
    if (this.known === undefined) return undefined;
    if (!this.trusted()) {
      this.known = undefined;
      return undefined;
    }
    return this.known;
  }

  /** The states: from memory while trusted (now), else a fresh read. */
  get(): Promise<ReadonlyMap<string, store.ZoneGeneration>> {
    const known = this.now();
    return known ? Promise.resolve(known) : this.read.get();
  }

  /** A read of Postgres that started after this call (and keeps the states in memory again, when trusted). */
  fresh(): Promise<ReadonlyMap<string, store.ZoneGeneration>> {
    return this.read.get();
  }

  /**
   * The zone's generation, as a NOTIFY or a committed snapshot told it: the states kept move to it. A
   * zone not kept as synced (new, never synced) makes the next caller read Postgres instead.
   */
  heard(zone: string, generation: bigint): void {
    if ((this.heardMax.get(zone) ?? -1n) < generation) this.heardMax.set(zone, generation);
    const known = this.known;
    if (known === undefined) return;
    const z = known.get(zone);
    if (z === undefined || z.state !== 'synced') {
      this.known = undefined;
      return;
    }
    if (z.generation >= generation) return;
    // A new map: a caller holding the old one (one request's read) keeps what it read.
    this.known = new Map(known).set(zone, { ...z, generation });
  }

  /** The listener was lost or is back (notifications may have been missed), or this replica changed a zone: read Postgres next. */
  forget(): void {
    this.epoch++;
    this.known = undefined;
  }

  /** A read (just made, not shared yet) moved to what was heard meanwhile; undefined when that cannot be told (a zone not synced in it). */
  private merged(states: States): States | undefined {
    for (const [zone, g] of this.heardMax) {
      const z = states.get(zone);
      if (z === undefined || g <= z.generation) continue;
      if (z.state !== 'synced') return undefined;
      states.set(zone, { ...z, generation: g });
    }
    return states;
  }
}
