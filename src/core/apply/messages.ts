/**
 * How the apply path names OVH operations for people, in its errors and logs.
 */
import type { OvhOperation } from '../../ovh/types.js';

/** `POST /domain/zone/z/record (www A 192.0.2.1)`: the call and the record it is about. */
export function opLabel(op: OvhOperation): string {
  const r = op.method === 'POST' ? op.body : op.method === 'PUT' ? { ...op.before, target: op.body.target } : op.before;
  return `${op.method} ${op.path} (${r.subDomain === '' ? '@' : r.subDomain} ${r.fieldType} ${r.target})`;
}

/** `DELETE …/record/1 (a A 192.0.2.1), PUT …` — what was sent, for people (the first ten). */
export function listOps(ops: readonly OvhOperation[]): string {
  const shown = ops.slice(0, 10).map(opLabel).join(', ');
  return ops.length > 10 ? `${shown} and ${ops.length - 10} more` : shown;
}
