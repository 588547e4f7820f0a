// A plan (Connect JSON of dnsplane.v1.Plan) as the lines `dnsplane plan` prints (src/cli/render.ts),
// each with a kind for its colour: the console and the CLI show a plan the same way, line for line
// (test/ui/console.test.ts compares them).
import { h, targetText } from './dom.js';
import { pagedLines } from './table.js';

const SHARED_LABEL = 'dnsplane/shared';
const POLICY_NAMES = { POLICY_UNSPECIFIED: 'sync', POLICY_SYNC: 'sync', POLICY_UPSERT_ONLY: 'upsert-only', POLICY_CREATE_ONLY: 'create-only' };
const ACTION_NAMES = { CHANGE_ACTION_CREATE: 'create', CHANGE_ACTION_UPDATE: 'update', CHANGE_ACTION_DELETE: 'delete' };

const ttlOf = (e) => e.ttl ?? 0;
const ttl = (e) => (ttlOf(e) === 0 ? 'ttl default' : `ttl ${ttlOf(e)}`);
const targets = (e) => targetText(e);
const setName = (e) => `${e.dnsName} ${e.recordType}${e.labels?.[SHARED_LABEL] === 'true' ? ' (shared set: your targets)' : ''}`;
const operationLine = (op) => `${op.method} ${op.path}${op.body ? ` ${op.body}` : ''}`;

export function policyName(p) {
  return POLICY_NAMES[p ?? 'POLICY_UNSPECIFIED'] ?? 'sync';
}

function changeLines(c) {
  const out = [];
  const b = c.before;
  const a = c.after;
  switch (c.action) {
    case 'CHANGE_ACTION_CREATE':
      out.push({ kind: 'add', text: `  + ${setName(a)} ${ttl(a)}: ${targets(a)}` });
      break;
    case 'CHANGE_ACTION_UPDATE': {
      const ttlPart = ttlOf(b) === ttlOf(a) ? ttl(a) : `${ttl(b)} -> ${ttlOf(a) === 0 ? 'default' : ttlOf(a)}`;
      out.push({ kind: 'change', text: `  ~ ${setName(a)} ${ttlPart}: ${targets(b)} -> ${targets(a)}` });
      break;
    }
    case 'CHANGE_ACTION_DELETE':
      out.push({ kind: 'remove', text: `  - ${setName(b)} ${ttl(b)}: ${targets(b)}` });
      break;
    default:
      out.push({ kind: 'plain', text: `  ? unknown change ${String(c.action)}` });
  }
  for (const w of c.warnings ?? []) out.push({ kind: 'warning', text: `      warning: ${w}` });
  for (const op of c.operations ?? []) out.push({ kind: 'call', text: `      ${operationLine(op)}` });
  return out;
}

function conflictLine(c) {
  const e = c.endpoint;
  const who = (c.owner ?? '') === '' ? 'no owner' : `owner "${c.owner}"`;
  return { kind: 'conflict', text: `  ! ${setName(e)} (${ACTION_NAMES[c.action] ?? 'change'}: ${targets(e)}), ${who}: ${c.reason ?? ''}` };
}

export function countPlan(plan) {
  const n = { create: 0, update: 0, delete: 0, conflicts: 0, calls: 0 };
  for (const z of plan.zones ?? []) {
    for (const c of z.changes ?? []) {
      if (c.action === 'CHANGE_ACTION_CREATE') n.create++;
      else if (c.action === 'CHANGE_ACTION_UPDATE') n.update++;
      else if (c.action === 'CHANGE_ACTION_DELETE') n.delete++;
    }
    n.conflicts += (z.conflicts ?? []).length;
    n.calls += (z.operations ?? []).length;
  }
  return n;
}

/** A zone's change threshold and protected names, when they stop or mark the apply (as the CLI prints them). */
function thresholdLines(t, planId) {
  const out = [];
  if (t?.exceeded) {
    const what = `updates ${t.updates ?? 0} and deletes ${t.deletes ?? 0} of the ${t.owned ?? 0} record sets you own here, over the limit of ${t.maxPercent ?? 0}%`;
    out.push({
      kind: t.wouldRefuse ? 'conflict' : 'warning',
      text: `  ! change threshold: ${what}; ${t.wouldRefuse ? 'apply will refuse it without --force' : 'forced'}`,
    });
  }
  if ((t?.protectedNames ?? []).length > 0)
    out.push({
      kind: 'conflict',
      text: `  ! protected names: ${t.protectedNames.join(', ')}; apply will refuse it until an admin other than the one who asked approves it (dnsplane plan approve ${planId})`,
    });
  return out;
}

/** opts.applyHint false: no "Apply it with" line (a plan another write applies, e.g. a retire's). */
export function planLines(plan, opts = {}) {
  const expires = plan.expiresAt ? new Date(plan.expiresAt).toISOString() : '';
  const lines = [
    { kind: 'title', text: `Plan ${plan.id} for tenant "${plan.tenant}" (policy ${policyName(plan.policy)}${expires ? `; expires ${expires}` : ''})` },
  ];
  const zones = plan.zones ?? [];
  if (zones.length === 0) lines.push({ kind: 'plain', text: '' }, { kind: 'plain', text: 'No zone in this plan.' });
  for (const z of zones) {
    lines.push({ kind: 'plain', text: '' });
    const gen = z.baseGeneration ?? '0';
    const changes = z.changes ?? [];
    const conflicts = z.conflicts ?? [];
    if (changes.length === 0 && conflicts.length === 0) {
      lines.push({ kind: 'zone', text: `Zone ${z.zone} (generation ${gen}): no changes` });
      continue;
    }
    lines.push({ kind: 'zone', text: `Zone ${z.zone} (generation ${gen}):` });
    for (const c of changes) lines.push(...changeLines(c));
    for (const c of conflicts) lines.push(conflictLine(c));
    const shown = new Set(changes.flatMap((c) => (c.operations ?? []).map(operationLine)));
    for (const op of z.operations ?? []) if (!shown.has(operationLine(op))) lines.push({ kind: 'call', text: `  ${operationLine(op)}` });
    lines.push(...thresholdLines(z.threshold, plan.id));
  }
  const n = countPlan(plan);
  const plural = (k, one, many) => `${k} ${k === 1 ? one : many}`;
  lines.push(
    { kind: 'plain', text: '' },
    {
      kind: 'summary',
      text: `Plan: ${n.create} to create, ${n.update} to update, ${n.delete} to delete, ${plural(n.conflicts, 'conflict', 'conflicts')}; ${plural(n.calls, 'OVH call', 'OVH calls')}.`,
    },
  );
  const changed = zones.some((z) => (z.changes ?? []).length > 0);
  const force = zones.some((z) => z.threshold?.exceeded && z.threshold.wouldRefuse) ? ' --force' : '';
  if (opts.applyHint !== false) lines.push({ kind: 'plain', text: changed ? `Apply it with: dnsplane apply ${plan.id}${force}` : 'Nothing to apply.' });
  return lines;
}

/** The plan as a diff, a page of lines at a time (a plan can hold thousands of changes). */
export function planDiff(plan, opts = {}) {
  return pagedLines(planLines(plan, opts), {
    testid: 'diff',
    lineNode: (l) => h('div', { class: `line ${l.kind}` }, l.text === '' ? '\u00a0' : l.text),
  });
}
