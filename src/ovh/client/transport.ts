/**
 * The retry transport under OvhApi: every HTTP call to OVH goes through here — @ovhcloud/node-ovh
 * (or, for headers of ours, signed-request.ts) under the shared rate limit and the bound on calls in
 * flight, after the write guard, within our own timeout, retried when that is safe, reported to the
 * metrics, failed as an OvhError that keeps the status, OVH's message and the query id.
 *
 * Retries (RetryPolicy): a call that is safe to repeat (every GET, PUT — it sets the same values —,
 * DELETE — a repeat answers 404, which counts as done —, and POST …/refresh) is sent again after a
 * 5xx, a 408, a 429 or no answer (reset, dropped, timed out), up to `attempts` times in all. The wait
 * is the answer's Retry-After when it has one (a Retry-After longer than `maxRetryAfterMs` ends the
 * retries at once: waiting that long while holding a zone lock helps nobody), otherwise exponential
 * backoff with "equal jitter": attempt n waits a random time in [d/2, d], d = min(max, base * 2^n).
 *
 * Timeouts are ours, not node-ovh's: node-ovh's own timeout handling adds a listener to the
 * keep-alive socket on every request (a leak) and only idles the socket. Ours destroys the request
 * after `timeoutMs`, which is then a failure with status 0 ("no answer").
 */
import type { IncomingHttpHeaders } from 'node:http';
import ovh from '@ovhcloud/node-ovh';
import type { OvhClient } from '@ovhcloud/node-ovh';
import type { OvhEndpoint } from '../endpoint.js';
import { OvhError, kindOfStatus } from '../errors.js';
import { limiterFor, type RateBudget, type RateLimiter } from '../ratelimit.js';
import { installDiagnostics, withCallContext, type CallContext } from './diagnostics.js';
import type { OvhScope } from './scope.js';
import { needsOwnSigning, signedRequest, type OvhCredentials } from './signed-request.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the call fails at once. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 200, maxDelayMs: 5_000, maxRetryAfterMs: 30_000 };

/** Reported once per HTTP call (each attempt is one call). */
export interface OvhCallInfo {
  method: string;
  path: string;
  /** The path with zone and id replaced by placeholders, for metrics. */
  route: string;
  status: number;
  durationMs: number;
  /** Time spent waiting for a concurrency slot and the rate limit. */
  waitedMs: number;
  /**
   * When the rate limiter granted this attempt its token (performance.now() of this process): the
   * point where the rate is enforced; the request is sent right after.
   */
  grantedAt: number;
  attempt: number;
  queryId?: string;
}

/** What the transport is told (OvhApiOptions holds these and more). */
export interface TransportOptions {
  endpoint: OvhEndpoint;
  credentials: OvhCredentials;
  timeoutMs?: number;
  ratePerSecond?: number;
  maxConcurrent?: number;
  /** The account's budget shared with the other replicas (core/ovh-budget.ts); none: this process's rate is the account's. */
  budget?: RateBudget;
  retry?: Partial<RetryPolicy>;
  onCall?: (info: OvhCallInfo) => void;
  /** Warnings (retries, lookups); never given secrets. */
  warn?: (msg: string, fields?: Record<string, unknown>) => void;
  /** DNSPLANE_DRY_RUN's last line of defence: any call but a GET throws before it is sent. */
  readOnly?: boolean;
  /** For tests: how to sleep between retries. */
  sleep?: (ms: number) => Promise<void>;
}

/** An answer: its body, and its headers (empty when node-ovh made the request and the channel saw none). */
export interface Exchange {
  body: unknown;
  headers: IncomingHttpHeaders;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What names one OVH account to the rate limit: the API's endpoint and the application key (never logged or stored: see accountLabel). */
export function accountKey(endpoint: OvhEndpoint, credentials: OvhCredentials): string {
  return `${endpoint.host}:${endpoint.port}|${credentials.applicationKey}`;
}

/** The path with zone and id replaced by placeholders: the `route` label of the metrics. */
export function routeOf(path: string): string {
  return path.replace(/^\/domain\/zone\/[^/]+/, '/domain/zone/{zone}').replace(/\/record\/\d+$/, '/record/{id}');
}

export class OvhTransport {
  private readonly client: OvhClient;
  readonly limiter: RateLimiter;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  readonly sleep: (ms: number) => Promise<void>;
  private timeSynced: Promise<void> | undefined;
  private readonly observers = new Set<(info: OvhCallInfo) => void>();

  constructor(private readonly opts: TransportOptions) {
    installDiagnostics();
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    if (!(this.timeoutMs > 0)) throw new RangeError(`timeoutMs: expected a positive number, got ${this.timeoutMs}`);
    this.client = ovh({
      host: opts.endpoint.host,
      port: opts.endpoint.port,
      basePath: opts.endpoint.basePath,
      appKey: opts.credentials.applicationKey,
      appSecret: opts.credentials.applicationSecret,
      consumerKey: opts.credentials.consumerKey,
      // No `timeout`: see the module comment; once() enforces this.timeoutMs.
    });
    this.limiter = limiterFor(accountKey(opts.endpoint, opts.credentials), opts.ratePerSecond ?? 20, opts.maxConcurrent ?? 8, opts.budget);
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    if (!(Number.isInteger(this.retry.attempts) && this.retry.attempts >= 1))
      throw new RangeError(`retry.attempts: expected an integer >= 1, got ${this.retry.attempts}`);
    this.sleep = opts.sleep ?? defaultSleep;
  }

  /** Another listener of every call, beside `onCall`. Returns the function that removes it. */
  observeCalls(fn: (info: OvhCallInfo) => void): () => void {
    this.observers.add(fn);
    return () => this.observers.delete(fn);
  }

  /** One logical call in `scope` (its flow's share of the rate, its guard before a write): retried when `safe` and the failure is transient. */
  async call(scope: OvhScope, method: string, path: string, params: Record<string, unknown> | undefined, safe: boolean, needsTime = true): Promise<unknown> {
    return (await this.exchange(scope, method, path, params, safe, { needsTime })).body;
  }

  /** call(), with request headers of our own and the answer's headers. */
  async exchange(
    scope: OvhScope,
    method: string,
    path: string,
    params: Record<string, unknown> | undefined,
    safe: boolean,
    opts: { needsTime?: boolean; headers?: Record<string, string> } = {},
  ): Promise<Exchange> {
    if (this.opts.readOnly && method !== 'GET') throw new OvhError(method, path, 0, 'unknown', 'not sent: this client is read-only (DNSPLANE_DRY_RUN)');
    if (opts.needsTime ?? true) await this.ensureTime(scope);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(scope, method, path, params, attempt, opts.headers);
      } catch (e) {
        if (!(e instanceof OvhError) || !safe || !e.transient || attempt + 1 >= this.retry.attempts) throw e;
        const delay = this.retryDelay(e, attempt);
        if (delay === undefined) throw e;
        this.opts.warn?.('OVH call failed, retrying', { method, path, status: e.status, attempt: attempt + 1, delayMs: delay });
        await this.sleep(delay);
      }
    }
  }

  /** Equal jitter: a random time in [d/2, d], d = min(maxDelayMs, baseDelayMs * 2^attempt). */
  backoff(attempt: number): number {
    const exp = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
    return Math.round(exp / 2 + Math.random() * (exp / 2));
  }

  /** How long to wait before attempt `attempt + 1`; undefined: do not retry (Retry-After too long). */
  retryDelay(e: OvhError, attempt: number): number | undefined {
    if (e.retryAfterMs !== undefined) return e.retryAfterMs > this.retry.maxRetryAfterMs ? undefined : e.retryAfterMs;
    return this.backoff(attempt);
  }

  private async ensureTime(scope: OvhScope): Promise<void> {
    // node-ovh would fetch /auth/time lazily inside the first call, out of our rate limit and context.
    this.timeSynced ??= (async () => {
      const time = await this.call(scope, 'GET', '/auth/time', undefined, true, false);
      this.client.apiTimeDiff = Number(time) - Math.round(Date.now() / 1000);
    })().catch((e: unknown) => {
      this.timeSynced = undefined;
      throw e;
    });
    return this.timeSynced;
  }

  private async once(
    scope: OvhScope,
    method: string,
    path: string,
    params: Record<string, unknown> | undefined,
    attempt: number,
    headers?: Record<string, string>,
  ): Promise<Exchange> {
    if (headers && method !== 'GET') throw new Error('requests with headers of ours: GET only');
    // In turn with the other tenants and zones waiting (the flow core scoped this work to).
    const { waitedMs, grantedAt } = await this.limiter.acquire(scope.flow ?? {});
    if (method !== 'GET') {
      const { guard } = scope;
      // Refused: not sent, not reported as a call; the guard's error ends the call as it is.
      if (guard)
        await guard.beforeWrite(method, path).catch((e: unknown) => {
          this.limiter.release();
          throw e;
        });
    }
    const ctx: CallContext = {};
    const start = performance.now();
    const report = (status: number) => {
      const info: OvhCallInfo = {
        method,
        path,
        route: routeOf(path),
        status,
        durationMs: performance.now() - start,
        waitedMs,
        grantedAt,
        attempt,
        queryId: ctx.queryId,
      };
      this.opts.onCall?.(info);
      for (const fn of this.observers) fn(info);
    };
    let timer: NodeJS.Timeout | undefined;
    let callEnded: (() => void) | undefined;
    try {
      const { result: answer, done } = withCallContext(ctx, () =>
        headers || needsOwnSigning(path)
          ? signedRequest(this.opts.endpoint, this.opts.credentials, this.client.apiTimeDiff ?? 0, method, path, params, headers)
          : this.client.requestPromised(method, path, params),
      );
      callEnded = done;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          // node-ovh's callback then rejects `answer`, which the race below has already left.
          ctx.request?.destroy();
          reject(new OvhError(method, path, 0, 'network', `no answer within ${this.timeoutMs} ms`, ctx.queryId));
        }, this.timeoutMs);
      });
      const result = await Promise.race([answer, timeout]);
      report(ctx.status ?? 200);
      return { body: result, headers: ctx.headers ?? {} };
    } catch (e) {
      const err = e instanceof OvhError ? e : ovhErrorOfRejection(method, path, e, ctx);
      report(err.status);
      throw err;
    } finally {
      clearTimeout(timer);
      callEnded?.();
      this.limiter.release();
    }
  }
}

/** node-ovh's rejection (`{error: status | errno | text, message}`) as an OvhError, with what the channel saw. */
function ovhErrorOfRejection(method: string, path: string, rejection: unknown, ctx: CallContext): OvhError {
  const r = (rejection ?? {}) as { error?: unknown; message?: unknown };
  let status = typeof r.error === 'number' && r.error > 0 ? r.error : 0;
  // A string error means an unparsable body (e.g. OVH's HTML 408): the status was seen on the wire.
  if (status === 0 && typeof r.error === 'string' && ctx.status) status = ctx.status;
  const message =
    typeof r.message === 'string'
      ? r.message
      : typeof r.error === 'string'
        ? r.error
        : r.error instanceof Error
          ? r.error.message
          : typeof r.error === 'number' && r.error < 0
            ? `connection error (errno ${r.error})`
            : '';
  return new OvhError(method, path, status, kindOfStatus(status, message), message, ctx.queryId, ctx.retryAfterMs);
}
