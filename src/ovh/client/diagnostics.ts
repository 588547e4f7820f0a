/**
 * What node-ovh does not hand back, read from Node's http diagnostics channel: the HTTP status of an
 * answer whose body did not parse, the X-Ovh-Queryid, the Retry-After and the paging headers. Each
 * OVH call runs inside its own CallContext, and the channel's messages are matched to it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';

/** One attempt's request, and what its answer's headers said. */
export interface CallContext {
  request?: ClientRequest;
  status?: number;
  queryId?: string;
  retryAfterMs?: number;
  /** The answer's headers (paging headers are read from them). */
  headers?: IncomingHttpHeaders;
}

/**
 * node-ovh calls https.request synchronously inside requestPromised(), which we run inside
 * callStore.run(ctx): Node publishes http.client.request.start later (once the request has a socket),
 * in the async context of that call, so getStore() there is this request's context. This is the one
 * piece of async context left in the client: nothing else tells a channel message whose call it is.
 */
const callStore = new AsyncLocalStorage<CallContext>();
const contexts = new WeakMap<ClientRequest, CallContext>();
let diagnosticsInstalled = false;

/** Subscribes to the channels, once per process. */
export function installDiagnostics(): void {
  if (diagnosticsInstalled) return;
  diagnosticsInstalled = true;
  dc.subscribe('http.client.request.start', (message) => {
    const { request } = message as { request: ClientRequest };
    const ctx = callStore.getStore();
    if (ctx && !ctx.request) {
      ctx.request = request;
      contexts.set(request, ctx);
    }
  });
  dc.subscribe('http.client.response.finish', (message) => {
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    const ctx = contexts.get(request);
    if (!ctx) return;
    ctx.status = response.statusCode;
    ctx.headers = response.headers;
    const qid = response.headers['x-ovh-queryid'];
    if (typeof qid === 'string') ctx.queryId = qid;
    ctx.retryAfterMs = parseRetryAfter(response.headers['retry-after']);
  });
}

/**
 * Calls whose channel messages may still come. The store is enabled only while there is one:
 * an enabled AsyncLocalStorage turns on async_hooks for the whole process, which then costs every
 * promise of every request (a Records poll included) even when no OVH call is under way.
 */
let inFlight = 0;

/**
 * Runs fn (which sends one request) so that the channel's messages about it land in `ctx`; `done`
 * (call it once, when the call has ended: its answer, its error or its timeout) lets the store go
 * quiet when no other call is under way.
 */
export function withCallContext<T>(ctx: CallContext, fn: () => T): { result: T; done: () => void } {
  inFlight++;
  let ended = false;
  const done = () => {
    if (ended) return;
    ended = true;
    if (--inFlight === 0) callStore.disable();
  };
  try {
    return { result: callStore.run(ctx, fn), done };
  } catch (e) {
    done();
    throw e;
  }
}

/** Whether the call store is on (an OVH call is under way): for tests that prove an idle process runs no async hooks. */
export function callContextActive(): boolean {
  return inFlight > 0;
}

function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
