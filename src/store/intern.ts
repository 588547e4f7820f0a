/**
 * One copy of the strings that repeat across a zone's rows: a zone's name, a record type, a tenant's
 * id and name. pg makes a new string of every column of every row, so a zone of 50,000 ownership rows
 * read whole would hold 50,000 copies of each of its twenty tenants' names; the read cache and the
 * apply path's view keep what is read for as long as its generation is current. Only for columns of
 * few distinct values (never a record's name or target: they rarely repeat); bounded — past
 * MAX_INTERNED distinct strings, it starts again empty (still correct: equal strings, fewer shared).
 */
const MAX_INTERNED = 50_000;
const interned = new Map<string, string>();

/** The one kept copy of `s` (the first one seen). */
export function intern(s: string): string {
  const kept = interned.get(s);
  if (kept !== undefined) return kept;
  if (interned.size >= MAX_INTERNED) interned.clear();
  interned.set(s, s);
  return s;
}
