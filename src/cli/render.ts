/**
 * A plan as a person reads it (terraform style), for `dnsplane plan`. Pure: a Plan message in, lines
 * out. Per zone, one line per change — `+` create, `~` update (old -> new), `-` delete — with the OVH
 * calls it makes under it, then `!` per conflict (the owner, why), then the zone's refresh; a summary
 * at the end. Colours (ANSI) only when asked, i.e. on a terminal.
 */
import { SHARED_LABEL } from '../dns/diff.js';
import { isTxtFamily } from '../dns/types.js';
import { ChangeAction, Policy, type Conflict, type Endpoint, type OvhOperation, type Plan, type PlannedChange } from '../gen/dnsplane/v1/zone_pb.js';

export interface RenderOptions {
  color: boolean;
}

const ANSI = { green: '32', yellow: '33', red: '31', magenta: '35', dim: '2', bold: '1' } as const;

function paint(on: boolean, color: keyof typeof ANSI, text: string): string {
  return on ? `\u001b[${ANSI[color]}m${text}\u001b[0m` : text;
}

/** Text targets (TXT, and OVH's SPF, DKIM and DMARC, TXT on the wire) quoted, as the console shows them (ui/public/dom.js). */
function targets(e: Endpoint): string {
  const list = isTxtFamily(e.recordType) ? e.targets.map((t) => JSON.stringify(t)) : e.targets;
  return list.join(', ');
}

function ttl(e: Endpoint): string {
  return e.ttl === 0 ? 'ttl default' : `ttl ${e.ttl}`;
}

function setName(e: Endpoint): string {
  const shared = e.labels[SHARED_LABEL] === 'true' ? ' (shared set: your targets)' : '';
  return `${e.dnsName} ${e.recordType}${shared}`;
}

function operationLine(op: OvhOperation): string {
  return `${op.method} ${op.path}${op.body ? ` ${op.body}` : ''}`;
}

const POLICY_NAMES: Record<number, string> = {
  [Policy.UNSPECIFIED]: 'sync',
  [Policy.SYNC]: 'sync',
  [Policy.UPSERT_ONLY]: 'upsert-only',
  [Policy.CREATE_ONLY]: 'create-only',
};

function changeLines(c: PlannedChange, color: boolean): string[] {
  const lines: string[] = [];
  switch (c.action) {
    case ChangeAction.CREATE: {
      const a = c.after!;
      lines.push(paint(color, 'green', `  + ${setName(a)} ${ttl(a)}: ${targets(a)}`));
      break;
    }
    case ChangeAction.UPDATE: {
      const b = c.before!;
      const a = c.after!;
      const ttlPart = b.ttl === a.ttl ? ttl(a) : `${ttl(b)} -> ${a.ttl === 0 ? 'default' : a.ttl}`;
      lines.push(paint(color, 'yellow', `  ~ ${setName(a)} ${ttlPart}: ${targets(b)} -> ${targets(a)}`));
      break;
    }
    case ChangeAction.DELETE: {
      const b = c.before!;
      lines.push(paint(color, 'red', `  - ${setName(b)} ${ttl(b)}: ${targets(b)}`));
      break;
    }
    default:
      lines.push(`  ? unknown change ${String(c.action)}`);
  }
  for (const w of c.warnings) lines.push(`      warning: ${w}`);
  for (const op of c.operations) lines.push(paint(color, 'dim', `      ${operationLine(op)}`));
  return lines;
}

const ACTION_NAMES: Record<number, string> = {
  [ChangeAction.CREATE]: 'create',
  [ChangeAction.UPDATE]: 'update',
  [ChangeAction.DELETE]: 'delete',
};

function conflictLine(c: Conflict, color: boolean): string {
  const e = c.endpoint!;
  const who = c.owner === '' ? 'no owner' : `owner "${c.owner}"`;
  return paint(color, 'magenta', `  ! ${setName(e)} (${ACTION_NAMES[c.action] ?? 'change'}: ${targets(e)}), ${who}: ${c.reason}`);
}

export interface PlanCounts {
  create: number;
  update: number;
  delete: number;
  conflicts: number;
  /** OVH calls, refreshes included. */
  calls: number;
}

export function countPlan(plan: Plan): PlanCounts {
  const n: PlanCounts = { create: 0, update: 0, delete: 0, conflicts: 0, calls: 0 };
  for (const z of plan.zones) {
    for (const c of z.changes) {
      if (c.action === ChangeAction.CREATE) n.create++;
      else if (c.action === ChangeAction.UPDATE) n.update++;
      else if (c.action === ChangeAction.DELETE) n.delete++;
    }
    n.conflicts += z.conflicts.length;
    n.calls += z.operations.length;
  }
  return n;
}

/** Whether applying the plan would change anything. */
export function hasChanges(plan: Plan): boolean {
  return plan.zones.some((z) => z.changes.length > 0);
}

export function renderPlan(plan: Plan, opts: RenderOptions): string[] {
  const { color } = opts;
  const expires = plan.expiresAt ? new Date(Number(plan.expiresAt.seconds) * 1000 + Math.floor(plan.expiresAt.nanos / 1e6)).toISOString() : '';
  const lines = [
    paint(color, 'bold', `Plan ${plan.id} for tenant "${plan.tenant}" (policy ${POLICY_NAMES[plan.policy] ?? 'sync'}${expires ? `; expires ${expires}` : ''})`),
  ];
  if (plan.zones.length === 0) lines.push('', 'No zone in this plan.');
  for (const z of plan.zones) {
    lines.push('');
    if (z.changes.length === 0 && z.conflicts.length === 0) {
      lines.push(`Zone ${z.zone} (generation ${z.baseGeneration}): no changes`);
      continue;
    }
    lines.push(`Zone ${z.zone} (generation ${z.baseGeneration}):`);
    for (const c of z.changes) lines.push(...changeLines(c, color));
    for (const c of z.conflicts) lines.push(conflictLine(c, color));
    // What is not under a change (the refresh) comes last, once per zone.
    const shown = new Set(z.changes.flatMap((c) => c.operations.map(operationLine)));
    for (const op of z.operations) if (!shown.has(operationLine(op))) lines.push(paint(color, 'dim', `  ${operationLine(op)}`));
    const t = z.threshold;
    if (t?.exceeded) {
      const what = `updates ${t.updates} and deletes ${t.deletes} of the ${t.owned} record sets you own here, over the limit of ${t.maxPercent}%`;
      lines.push(
        paint(color, t.wouldRefuse ? 'red' : 'yellow', `  ! change threshold: ${what}; ${t.wouldRefuse ? 'apply will refuse it without --force' : 'forced'}`),
      );
    }
    if (t && t.protectedNames.length > 0) {
      lines.push(
        paint(
          color,
          'red',
          `  ! protected names: ${t.protectedNames.join(', ')}; apply will refuse it until an admin other than the one who asked approves it (dnsplane plan approve ${plan.id})`,
        ),
      );
    }
  }
  const n = countPlan(plan);
  const plural = (k: number, one: string, many: string) => `${k} ${k === 1 ? one : many}`;
  lines.push(
    '',
    `Plan: ${n.create} to create, ${n.update} to update, ${n.delete} to delete, ${plural(n.conflicts, 'conflict', 'conflicts')}; ${plural(n.calls, 'OVH call', 'OVH calls')}.`,
  );
  if (hasChanges(plan))
    lines.push(`Apply it with: dnsplane apply ${plan.id}${plan.zones.some((z) => z.threshold?.exceeded && z.threshold.wouldRefuse) ? ' --force' : ''}`);
  else lines.push('Nothing to apply.');
  return lines;
}
