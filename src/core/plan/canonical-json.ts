/**
 * Canonical JSON, the text a stored plan is digested and kept as (core/plan/stored.ts's serializePlan).
 */

/**
 * JSON with every object's keys in one order whatever order they were built or read back in (jsonb
 * keeps none): sorted, integer-like keys first in numeric order as JSON.stringify always puts them.
 * Undefined members are left out, undefined in an array is null. Copies the objects with their keys
 * in order and lets JSON.stringify write them: it runs over every change of a plan, at Plan and twice
 * per zone at Apply, and a hand-written walk appending strings is several times slower.
 */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(sortKeysDeep(v)) ?? 'undefined';
}

function sortKeysDeep(x: unknown): unknown {
  if (x === null || typeof x !== 'object') return x;
  if (Array.isArray(x)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < x.length; i++) {
      const e: unknown = x[i];
      const s = e !== null && typeof e === 'object' ? sortKeysDeep(e) : e;
      if (s !== e) (out ??= x.slice())[i] = s;
    }
    return out ?? x;
  }
  const o = x as Record<string, unknown>;
  const keys = Object.keys(o);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = (keys[i - 1] as string) < (keys[i] as string);
  // Already in order (most endpoints and operations are built so), a plain object, and no member
  // changed below: the object itself, as for arrays. Objects with toJSON (Date) are copied, as before.
  if (sorted && Object.getPrototypeOf(o) === Object.prototype) {
    let out: Record<string, unknown> | undefined;
    for (const k of keys) {
      const e = o[k];
      if (e === null || typeof e !== 'object') continue;
      const s = sortKeysDeep(e);
      if (s !== e) (out ??= { ...o })[k] = s;
    }
    return out ?? o;
  }
  if (!sorted) keys.sort();
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const e = o[k];
    out[k] = e !== null && typeof e === 'object' ? sortKeysDeep(e) : e;
  }
  return out;
}
