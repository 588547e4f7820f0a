/**
 * Fault injection for the simulated API.
 *
 * A rule says WHICH calls fail and HOW:
 *
 * ```ts
 * sim.faults.fail({
 *   method: 'POST',                      // optional; one method or a list; case-insensitive; default any
 *   path: '/domain/zone/example.test/record', // optional; relative to /1.0, query excluded; default any
 *   nth: 3,                              // optional: only the 3rd matching call (1-based, counted from now)
 *   times: 2,                            // optional: this many calls (from the nth on, or from the next one)
 *   effect: { kind: 'status', status: 500 },
 * });
 * ```
 *
 * Path patterns: a RegExp is tested against the path; a string matches the whole path, where `*` stands
 * for any characters except `/` (one path segment or part of one) and `**` for any characters at all.
 * A leading `/1.0` in a string pattern is ignored. So `/domain/zone/` + `*` + `/record` matches the record
 * list (GET) and creation (POST) of every zone, and `/domain/zone/` + `**` every zone route.
 *
 * Counting: every rule counts the calls that match it (method and path), whether or not it or another
 * rule fires on them. Without `nth` and `times` a rule fires on every matching call until removed or
 * cleared; with `times` only (N), on the next N matching calls; with `nth` (K), on calls K … K+times-1
 * (times defaults to 1 then). A rule that can no longer fire is removed. When several rules fire on one
 * call, the one added first wins.
 *
 * Effects (`kind`):
 * - `status`: answer `status` with an OVH JSON error body: `body` if given, else OVH's default for the
 *   status (`{"class":"Server::InternalServerError","message":"Internal server error"}`, 404s naming the
 *   record or zone of the path, …); extra `headers` optional. The operation is NOT performed, unless
 *   `apply: true` (then it is performed and its answer replaced: "OVH did it, then failed").
 * - `html`: answer `status` (default 408) with an HTML body (`text/html`), as OVH's front end does under
 *   load; the node client then rejects with a string error (unparsable body). `apply` as above.
 * - `rateLimit`: answer 429 with an OVH-style JSON body and, when `retryAfterSeconds` is given, a
 *   `Retry-After` header. Not performed.
 * - `drop`: destroy the connection without answering; not performed. Logged with status 0.
 * - `applyThenDrop`: perform the operation (state changed, persisted), then destroy the connection
 *   without answering: a POST that timed out after OVH did it. Logged with status 0.
 * - `delay`: hold the call `ms` milliseconds, then handle it normally (on top of the global latency).
 * - `hang`: never answer (until the client gives up or the simulator stops); not performed. Status 0.
 * - `idZero`: perform the operation and answer normally, but with `id: 0` in the answered record
 *   (OVH's known bug on POST …/record).
 *
 * Faults are checked before authentication and routing: they model the network and OVH's front end.
 */

export type FaultEffect =
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string>; apply?: boolean }
  | { kind: 'html'; status?: number; body?: string; apply?: boolean }
  | { kind: 'rateLimit'; retryAfterSeconds?: number; body?: unknown }
  | { kind: 'drop' }
  | { kind: 'applyThenDrop' }
  | { kind: 'delay'; ms: number }
  | { kind: 'hang' }
  | { kind: 'idZero' };

export interface FaultRule {
  /** One method or several; case-insensitive. Default: any. */
  method?: string | readonly string[];
  /** Relative to /1.0, without the query. String with `*` / `**`, or a RegExp. Default: any. */
  path?: string | RegExp;
  /** Fire on the nth matching call only (1-based, counted from when the rule was added). */
  nth?: number;
  /** Fire on this many matching calls (from the nth when given). Default: unlimited, or 1 with nth. */
  times?: number;
  effect: FaultEffect;
}

/** What fail() returns: the rule's counters, and a way to remove it. */
export interface FaultHandle {
  /** Matching calls seen so far. */
  readonly matched: number;
  /** Calls it fired on so far. */
  readonly fired: number;
  /** False once removed, cleared, or spent. */
  readonly active: boolean;
  remove(): void;
}

/** The faults API of a simulator. */
export interface SimFaults {
  /** Added to every API answer: each call is held this long before it is handled. */
  setLatency(ms: number): void;
  /** Adds a rule; see the module comment. */
  fail(rule: FaultRule): FaultHandle;
  /** Removes every rule and sets the latency back to 0. */
  clear(): void;
}

/** A string pattern as an anchored RegExp. */
export function patternToRegExp(pattern: string): RegExp {
  const p = pattern.startsWith('/1.0/') ? pattern.slice(4) : pattern;
  let src = '';
  for (let i = 0; i < p.length; i++) {
    const c = p.charAt(i);
    if (c === '*' && p.charAt(i + 1) === '*') {
      src += '.*';
      i++;
    } else if (c === '*') {
      src += '[^/]*';
    } else {
      src += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${src}$`);
}

class ActiveRule implements FaultHandle {
  matched = 0;
  fired = 0;
  active = true;
  private readonly methods: ReadonlySet<string> | null;
  private readonly path: RegExp | null;

  constructor(
    readonly rule: FaultRule,
    private readonly onRemove: (r: ActiveRule) => void,
  ) {
    if (rule.nth !== undefined && (!Number.isInteger(rule.nth) || rule.nth < 1)) throw new Error('fault rule: nth must be an integer >= 1');
    if (rule.times !== undefined && (!Number.isInteger(rule.times) || rule.times < 1)) throw new Error('fault rule: times must be an integer >= 1');
    const methods = rule.method === undefined ? null : typeof rule.method === 'string' ? [rule.method] : rule.method;
    this.methods = methods ? new Set(methods.map((m) => m.toUpperCase())) : null;
    this.path = rule.path === undefined ? null : typeof rule.path === 'string' ? patternToRegExp(rule.path) : rule.path;
  }

  matches(method: string, path: string): boolean {
    if (this.methods && !this.methods.has(method.toUpperCase())) return false;
    if (this.path) {
      this.path.lastIndex = 0;
      if (!this.path.test(path)) return false;
    }
    return true;
  }

  /** Counts a matching call; true when the rule fires on it. */
  count(): boolean {
    this.matched++;
    const { nth, times } = this.rule;
    let fire: boolean;
    if (nth !== undefined) {
      fire = this.matched >= nth && this.matched < nth + (times ?? 1);
      if (this.matched >= nth + (times ?? 1) - 1) this.remove();
    } else {
      fire = times === undefined || this.fired < times;
      if (times !== undefined && this.fired + 1 >= times) this.remove();
    }
    if (fire) this.fired++;
    return fire;
  }

  remove(): void {
    if (!this.active) return;
    this.active = false;
    this.onRemove(this);
  }
}

export class FaultSet implements SimFaults {
  private rules: ActiveRule[] = [];
  private latency = 0;

  setLatency(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new Error('latency must be a number of ms >= 0');
    this.latency = ms;
  }

  latencyMs(): number {
    return this.latency;
  }

  fail(rule: FaultRule): FaultHandle {
    const active = new ActiveRule(rule, (r) => {
      this.rules = this.rules.filter((x) => x !== r);
    });
    this.rules.push(active);
    return active;
  }

  clear(): void {
    for (const r of [...this.rules]) r.remove();
    this.latency = 0;
  }

  /** Counts the call against every matching rule; the effect of the first that fires, if any. */
  match(method: string, path: string): FaultEffect | undefined {
    let effect: FaultEffect | undefined;
    for (const rule of [...this.rules]) {
      if (!rule.matches(method, path)) continue;
      if (rule.count() && effect === undefined) effect = rule.rule.effect;
    }
    return effect;
  }
}
