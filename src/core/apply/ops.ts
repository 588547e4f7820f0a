/**
 * Sending one record operation to OVH, and what the whole apply path says about operations: the forms
 * a target takes on the way (as sent, as OVH answers it), the record sets an apply touches, an
 * operation that succeeded (Done) or failed (Failure), a write the fence refused, and the journal's
 * own pool.
 */
import { decodeTxt, formatTxtPresentation } from '../../dns/index.js';
import { OvhError } from '../../ovh/errors.js';
import type { OvhApi } from '../../ovh/client.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import type * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ShuttingDownError, ZoneLockLostError } from '../errors.js';

/** Autocommitted journal writes go through this pool, never through a connection a zone lock holds. */
export function journalPool(ctx: CoreContext): store.Queryable {
  return ctx.journalPool ?? ctx.pool;
}

/** Sends one record operation through `ovh`, a client scoped to the zone's fence; a creation answers the record OVH made. */
export async function send(ovh: OvhApi, zone: string, op: OvhOperation, knownIds: ReadonlySet<string>): Promise<OvhRecord | undefined> {
  switch (op.method) {
    case 'POST':
      return ovh.createRecord(zone, op.body, knownIds);
    case 'PUT':
      await ovh.updateRecord(zone, op.id, op.body);
      return undefined;
    case 'DELETE':
      await ovh.deleteRecord(zone, op.id);
      return undefined;
  }
}

/** An operation that succeeded; a creation with the record OVH made. */
export interface Done {
  op: OvhOperation;
  created?: OvhRecord;
}

/** Where an apply's sending stopped: an operation, or its refresh. */
export interface Failure {
  /** Index of the operation that failed; ops.length for the refresh. */
  index: number;
  op?: OvhOperation;
  error: unknown;
  /** The operation (or the refresh) was not sent at all: stopped by shutdown or refused by the fence. */
  notSent?: boolean;
}

/** The fence (or the shutdown deadline) refused a write: the error is ours, not OVH's. */
export function isFenceRefusal(e: unknown): boolean {
  return e instanceof ZoneLockLostError || e instanceof ShuttingDownError;
}

/** A target as OVH answered it, in the form to send back (TXT answers are quoted; sent as plain text). */
export function sendable(fieldType: string, answered: string): string {
  return fieldType === 'TXT' ? decodeTxt(answered) : answered;
}

/** A target we sent, in the form OVH answers it (TXT quoted), so that the cache holds what a GET would. */
export function answered(fieldType: string, sent: string): string {
  return fieldType === 'TXT' ? formatTxtPresentation(sent) : sent;
}

/** A record set an apply touches: its name (relative to the zone, lowercase) and type. */
export interface TouchedName {
  subDomain: string;
  fieldType: string;
}

export function nameKey(n: TouchedName): string {
  return `${n.subDomain} ${n.fieldType}`;
}

export function touchedNames(ops: readonly OvhOperation[]): TouchedName[] {
  const seen = new Map<string, TouchedName>();
  for (const op of ops) {
    const n = op.method === 'POST' ? op.body : op.before;
    const t = { subDomain: n.subDomain.toLowerCase(), fieldType: n.fieldType };
    seen.set(nameKey(t), t);
  }
  return [...seen.values()];
}

export function statusOf(e: unknown): number {
  return e instanceof OvhError ? e.status : 0;
}
