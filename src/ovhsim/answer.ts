/**
 * The last step of the simulator's request pipeline: what is sent back for one call — JSON (OVH's
 * answers and error bodies), an HTML error page (OVH's front end under load), a dropped connection,
 * or no answer at all — and the outcome a fault imposes instead of the operation's.
 */
import type { ServerResponse } from 'node:http';
import { reasonPhrase } from '../ovhwire/errors.js';
import { defaultFaultBody } from './errors.js';
import type { FaultEffect } from './faults.js';
import type { SimCall } from './types.js';

/** What is sent back for one call. */
export type Outcome =
  | { kind: 'json'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'html'; status: number; body: string }
  | { kind: 'drop' }
  | { kind: 'hang' };

const HTML_BODIES: Record<number, string> = {
  408: "<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n",
};

function htmlBody(status: number): string {
  return HTML_BODIES[status] ?? `<html><body><h1>${status} ${reasonPhrase(status)}</h1>\n</body></html>\n`;
}

/**
 * The outcome a fault imposes at one of two moments: before the operation (`after` false: effects that
 * do not perform it) or after it (`after` true: effects that perform it first). undefined: none now.
 */
export function faultOutcome(fault: FaultEffect, path: string, after: boolean): Outcome | undefined {
  switch (fault.kind) {
    case 'status': {
      if ((fault.apply ?? false) !== after) return undefined;
      const headers = fault.headers ? { ...fault.headers } : undefined;
      return { kind: 'json', status: fault.status, body: fault.body ?? defaultFaultBody(fault.status, path), ...(headers ? { headers } : {}) };
    }
    case 'html': {
      if ((fault.apply ?? false) !== after) return undefined;
      const status = fault.status ?? 408;
      return { kind: 'html', status, body: fault.body ?? htmlBody(status) };
    }
    case 'rateLimit':
      if (after) return undefined;
      return {
        kind: 'json',
        status: 429,
        body: fault.body ?? defaultFaultBody(429, path),
        ...(fault.retryAfterSeconds !== undefined ? { headers: { 'Retry-After': String(fault.retryAfterSeconds) } } : {}),
      };
    case 'drop':
      return after ? undefined : { kind: 'drop' };
    case 'hang':
      return after ? undefined : { kind: 'hang' };
    case 'applyThenDrop':
      return after ? { kind: 'drop' } : undefined;
    case 'delay':
    case 'idZero':
      return undefined;
  }
}

/**
 * Sends `outcome` for `call` (every answer carries X-Ovh-Queryid) and returns the status it logged (0:
 * no answer). A hanging answer is added to `hanging`, which the simulator's stop() ends.
 */
export function sendOutcome(call: SimCall, res: ServerResponse, outcome: Outcome, hanging: Set<ServerResponse>): number {
  switch (outcome.kind) {
    case 'drop':
      res.socket?.destroy();
      res.destroy();
      return 0;
    case 'hang':
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return 0;
    case 'html': {
      const text = outcome.body;
      res.writeHead(outcome.status, {
        'Content-Type': 'text/html',
        'Content-Length': Buffer.byteLength(text),
        'X-Ovh-Queryid': call.queryId,
      });
      res.end(text);
      return outcome.status;
    }
    case 'json': {
      const headers: Record<string, string | number> = { 'X-Ovh-Queryid': call.queryId, ...outcome.headers };
      if (outcome.body === undefined) {
        if (outcome.status !== 204) headers['Content-Length'] = 0;
        res.writeHead(outcome.status, headers);
        res.end();
      } else {
        const text = JSON.stringify(outcome.body);
        headers['Content-Type'] = 'application/json; charset=utf-8';
        headers['Content-Length'] = Buffer.byteLength(text);
        res.writeHead(outcome.status, headers);
        res.end(text);
      }
      return outcome.status;
    }
  }
}
