/**
 * The checked targets' states in a Records answer (Endpoint.targetStates; core/ownership/withdrawn-view.ts adds
 * the withdrawn ones): healthy or failing, reason 'health', since when, the last answer. A target
 * that is withdrawn keeps the state core/ownership/withdrawn-view.ts gave it; one the checker holds down but that
 * stays published (never the last) shows failing. A checker's state change bumps the zone's
 * generation (core/health/checker.ts), so these are as fresh as the read cache's answers are.
 */
import type { Endpoint, TargetState } from '../../dns/types.js';
import type * as store from '../../store/index.js';

/** What one check found: for people (the journal's detail) and the checker's state. */
export interface CheckAnswer {
  ok: boolean;
  /** `200`, `503`, `connected`, `ECONNREFUSED`, `timeout after 2000 ms` … */
  result: string;
  /** How long the check took. */
  ms: number;
  /** When it was made (ISO). */
  at: string;
}

/** The last answer of a target's check, for people. */
export function lastAnswer(row: Pick<store.TargetHealthRow, 'answers'>): string {
  const answers = Array.isArray(row.answers) ? (row.answers as unknown as CheckAnswer[]) : [];
  const last = answers.at(-1);
  return last ? `${last.ok ? 'passes' : 'fails'}: ${last.result} (${last.ms} ms)` : '';
}

/** `endpoints` with the checked targets' states added (the others are the same objects). */
export function withHealthStates(endpoints: Endpoint[], health: readonly store.TargetHealthRow[]): Endpoint[] {
  if (health.length === 0) return endpoints;
  const bySet = new Map<string, store.TargetHealthRow[]>();
  for (const r of health) {
    const key = `${r.dnsName} ${r.recordType}`;
    bySet.set(key, [...(bySet.get(key) ?? []), r]);
  }
  return endpoints.map((e) => {
    const rows = bySet.get(`${e.dnsName} ${e.recordType}`);
    if (!rows) return e;
    const known = new Set((e.targetStates ?? []).map((s) => s.target));
    const added: TargetState[] = rows
      .filter((r) => e.targets.includes(r.target) && !known.has(r.target))
      .map((r) => ({ target: r.target, status: r.state === 'healthy' ? 'healthy' : 'failing', reason: 'health', since: r.since, detail: lastAnswer(r) }));
    return added.length === 0
      ? e
      : { ...e, targetStates: [...(e.targetStates ?? []), ...added].sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0)) };
  });
}

/** A shared ownership row's target's state by its check (AdminService.ListOwnership, when it is not withdrawn). */
export function healthTargetState(
  row: Pick<store.OwnershipRow, 'dnsName' | 'recordType' | 'target'>,
  health: readonly store.TargetHealthRow[],
): TargetState | undefined {
  if (row.target === '') return undefined;
  const h = health.find((r) => r.dnsName === row.dnsName && r.recordType === row.recordType && r.target === row.target);
  return h && { target: h.target, status: h.state === 'healthy' ? 'healthy' : 'failing', reason: 'health', since: h.since, detail: lastAnswer(h) };
}
