/**
 * The simulator's request pipeline, one HTTPS request at a time, in OVH's order: the call is logged
 * and its body read; the faults that model the network and OVH's front end act (latency, delays,
 * effects that answer before the operation); then, synchronously and so atomically, the body size,
 * the base path, the route, the signature (signature.ts) and the assumed rate limit are checked and
 * the operation is done (api.ts); effects that come after the operation act; the answer is sent
 * (answer.ts). The control surface tests use is simulator.ts.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { messageOf } from '../lib/error-message.js';
import { OvhApiError, payloadTooLarge, routeNotFound, tooManyRequests } from '../ovhwire/errors.js';
import { resolveRoute } from '../ovhwire/routes.js';
import { ApiRouter, type ApiAnswer } from './api.js';
import { faultOutcome, sendOutcome, type Outcome } from './answer.js';
import { defaultFaultBody } from './errors.js';
import type { FaultSet } from './faults.js';
import { checkSignature } from './signature.js';
import type { SimState } from './state.js';
import type { SimBehavior, SimCall, SimCredentials } from './types.js';

/** Largest request body accepted (OVH's real limit is not known; record bodies are tiny). */
const MAX_BODY_BYTES = 1024 * 1024;

/** What the pipeline works on, handed over by the simulator that owns it. */
export interface PipelineParts {
  state: SimState;
  /** Shared with the simulator, which may change it while running (setBehavior). */
  behavior: SimBehavior;
  credentials: SimCredentials;
  faults: FaultSet;
  /** Added to the server's clock (SimOptions.timeDriftSeconds). */
  timeDriftSeconds: number;
  /** Writes the state file, after an operation that changed the state. */
  persist: () => void;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/** One request as read off the wire. */
interface Received {
  call: SimCall;
  req: IncomingMessage;
  rawUrl: string;
  /** Whether the path is under /1.0. */
  underBase: boolean;
  rawBody: string;
  tooLarge: boolean;
}

export class RequestPipeline {
  /** Every call received, in order (auth/time and rejected ones included). */
  readonly calls: SimCall[] = [];
  private seq = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly router: ApiRouter;
  private readonly rateWindows = new Map<string, number[]>();
  private stopped = false;

  constructor(private readonly parts: PipelineParts) {
    this.router = new ApiRouter(parts.state, parts.behavior, () => this.serverTime());
  }

  /** Forgets the lists OVH keeps per caller (after a change of behaviour). */
  clearListCache(): void {
    this.router.clearListCache();
  }

  /** No more answers: pending delays are dropped and hanging answers ended. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
  }

  /** The HTTPS server's 'request' listener. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    const at = Date.now();
    const seq = ++this.seq;
    const queryId = `${this.parts.behavior.queryIdPrefix}.${Math.floor(at / 1000).toString(16)}.${seq}.${randomBytes(4).toString('hex')}`;
    const method = (req.method ?? 'GET').toUpperCase();
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const fullPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
    const path = fullPath === '/1.0' ? '/' : fullPath.startsWith('/1.0/') ? fullPath.slice(4) : fullPath;
    const query = Object.fromEntries(new URLSearchParams(q >= 0 ? rawUrl.slice(q + 1) : ''));
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if ((name.startsWith('x-pagination-') || name === 'pragma') && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const call: SimCall = { seq, at, method, path, query, body: undefined, status: 0, queryId, headers };
    this.calls.push(call);

    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const underBase = fullPath.startsWith('/1.0/') || fullPath === '/1.0';
      this.process({ call, req, rawUrl, underBase, rawBody, tooLarge }, res).catch((err: unknown) => {
        this.parts.log?.('ovhsim internal error', { seq: call.seq, error: messageOf(err) });
        res.destroy();
      });
    });
  }

  private async process(received: Received, res: ServerResponse): Promise<void> {
    const { call } = received;
    let body: unknown;
    let bodyInvalid = false;
    if (received.rawBody !== '') {
      try {
        body = JSON.parse(received.rawBody) as unknown;
      } catch {
        body = received.rawBody;
        bodyInvalid = true;
      }
    }
    call.body = body;

    const fault = this.parts.faults.match(call.method, call.path);
    await this.sleep(this.parts.faults.latencyMs());
    if (fault?.kind === 'delay') await this.sleep(fault.ms);
    if (this.stopped) return;

    let outcome: Outcome;
    const early = fault ? faultOutcome(fault, call.path, false) : undefined;
    if (early) {
      outcome = early;
    } else {
      const answer = this.execute(received, body, bodyInvalid);
      const late = fault ? faultOutcome(fault, call.path, true) : undefined;
      if (late) outcome = late;
      else {
        if (fault?.kind === 'idZero' && answer.status === 200 && typeof answer.body === 'object' && answer.body !== null && 'id' in answer.body) {
          answer.body = { ...answer.body, id: 0 };
        }
        outcome = { kind: 'json', ...answer };
      }
    }
    if (res.destroyed || this.stopped) return;
    call.status = sendOutcome(call, res, outcome, this.hanging);
    this.parts.log?.('ovhsim api call', {
      seq: call.seq,
      method: call.method,
      path: call.path,
      status: call.status,
      queryId: call.queryId,
      ms: Date.now() - call.at,
    });
  }

  /** Routing, authentication, rate limit, then the operation; synchronous, so atomic. */
  private execute(received: Received, body: unknown, bodyInvalid: boolean): ApiAnswer & { headers?: Record<string, string> } {
    const { call, req } = received;
    try {
      if (received.tooLarge) throw payloadTooLarge();
      if (!received.underBase) throw routeNotFound();
      const route = resolveRoute(call.method, call.path);
      if (route.name !== 'authTime') {
        const denied = checkSignature(
          {
            method: call.method,
            rawUrl: received.rawUrl,
            hostHeader: req.headers.host ?? '',
            rawBody: received.rawBody,
            header: (name) => {
              const v = req.headers[name];
              return Array.isArray(v) ? v[0] : v;
            },
          },
          this.parts.credentials,
          this.serverTime(),
          this.parts.behavior.timestampWindowSeconds,
        );
        if (denied) throw denied;
        this.checkRate();
      }
      const answer = this.router.handle(route, {
        method: call.method,
        path: call.path,
        query: call.query,
        body,
        bodyInvalid,
        headers: call.headers,
        caller: this.parts.credentials.consumerKey,
      });
      if (answer.changed) this.parts.persist();
      return answer;
    } catch (err) {
      if (err instanceof OvhApiError) return { status: err.status, body: err.body, changed: false, headers: err.headers };
      this.parts.log?.('ovhsim internal error', { seq: call.seq, error: messageOf(err) });
      return { status: 500, body: defaultFaultBody(500, call.path), changed: false };
    }
  }

  /** The assumed automatic rate limit (SimBehavior.rateLimit), per consumer key. */
  private checkRate(): void {
    const limit = this.parts.behavior.rateLimit;
    if (!limit) return;
    const now = Date.now();
    const key = this.parts.credentials.consumerKey;
    const window = (this.rateWindows.get(key) ?? []).filter((t) => t > now - limit.windowMs);
    if (window.length >= limit.max) {
      this.rateWindows.set(key, window);
      throw tooManyRequests(limit.retryAfterSeconds ?? 1);
    }
    window.push(now);
    this.rateWindows.set(key, window);
  }

  private serverTime(): number {
    return Math.round(Date.now() / 1000) + this.parts.timeDriftSeconds;
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }
}
