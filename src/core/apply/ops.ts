/**
 * What an apply, its undo and the recovery of a dead apply share: sending one record operation to OVH,
 * the forms a target takes on the way (as sent, as OVH answers it), the record sets an apply touches,
 * and the journal's own pool.
 */
import { decodeTxt, formatTxtPresentation } from '../../dns/index.js';
import { OvhError } from '../../ovh/errors.js';
import type { OvhOperation, OvhRecord } from '../../ovh/types.js';
import type * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';

/** Autocommitted journal writes go through this pool, never through a connection a zone lock holds. */
export function journalPool(ctx: CoreContext): store.Queryable {
  return ctx.journalPool ?? ctx.pool;
}

/** Sends one record operation through the fenced OVH client; a creation answers the record OVH made. */
export async function send(ctx: CoreContext, zone: string, op: OvhOperation, knownIds: ReadonlySet<string>): Promise<OvhRecord | undefined> {
  switch (op.method) {
    case 'POST':
      return ctx.ovh.createRecord(zone, op.body, knownIds);
    case 'PUT':
      await ctx.ovh.updateRecord(zone, op.id, op.body);
      return undefined;
    case 'DELETE':
      await ctx.ovh.deleteRecord(zone, op.id);
      return undefined;
  }
}

/** A target as OVH answered it, in the form to send back (TXT answers are quoted; sent as plain text). */
export function sendable(fieldType: string, answered: string): string {
  return fieldType === 'TXT' ? decodeTxt(answered) : answered;
}

/** A target we sent, in the form OVH answers it (TXT quoted), so that the cache holds what a GET would. */
export function answered(fieldType: string, sent: string): string {
  return fieldType === 'TXT' ? formatTxtPresentation(sent) : sent;
}

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

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
