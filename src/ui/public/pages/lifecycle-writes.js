// The Tenants page's writes of a cluster's life (issue 46), each through write.js's confirm step:
// - Hand over (AdminService.HandoverTenant): everything a tenant owns becomes another's, in one
//   transaction, no OVH call; undone from the Journal page's entry with `dnsplane journal revert ID`.
// - Drain / undrain (DrainTenant): its targets of shared sets withdrawn from OVH for maintenance (one
//   DELETE each, one refresh per zone, never a set's last target), or put back. The confirm step counts
//   them from ListOwnership (the tenant's rows: which zones, which are drained now).
// - Retire (RetireTenant): its ownership handed over, or its records deleted by an apply. For the
//   deletion the console plans it first (PlanAs: the tenant's desired state "nothing" in the zones it
//   owns, what the retire itself would plan) and shows the plan, its id and OVH calls; the retire then
//   applies that very plan, judged by the change threshold and approvals (a refusal shows the API's
//   message, naming the plan a second admin approves). Or it applies a plan given by id (approved since).
import { adminApi } from '../api.js';
import { countPlan, planDiff } from '../diff.js';
import { h } from '../dom.js';
import { field, writeDialog } from '../write.js';

const isDrained = (e) => (e.targetState?.reason ?? '').split(', ').includes('drained');
const zonesOf = (rows) => [...new Set(rows.map((r) => r.zone))].sort();
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const targetLine = (e) => `${e.dnsName} ${e.recordType} ${e.target} (${e.zone})`;
/** "console.test: 2, other.test: 1". */
const perZone = (rows) => zonesOf(rows).map((z) => `${z}: ${rows.filter((r) => r.zone === z).length}`);

export function lifecycleWrites(page, { refresh }) {
  const input = (id, placeholder) => h('input', { id, 'data-testid': id, type: 'text', autocomplete: 'off', placeholder });
  /** The tenant's ownership rows (ListOwnership), read once per dialog; `into` says what it owns when they come. */
  const ownership = (t, into, say) => {
    const rows = adminApi('ListOwnership', { tenant: t.name }).then((r) => r.entries ?? []);
    rows.then(
      (r) => {
        into.textContent = say(r);
      },
      (e) => {
        into.textContent = `Its ownership could not be read: ${e.message}`;
      },
    );
    return rows;
  };
  const journalIds = (ids) => (ids.length ? `journal ${ids.length === 1 ? 'entry' : 'entries'} ${ids.join(', ')}` : 'no journal entry');
  const callList = (calls, testid) => (calls.length ? h('pre', { class: 'mono', 'data-testid': testid }, calls.join('\n')) : null);

  const handover = (t) => {
    const to = input('ho-new', 'the tenant that takes over');
    const zone = input('ho-zone', 'empty: every zone');
    const suffix = input('ho-suffix', 'empty: every name');
    writeDialog(page, {
      title: `Hand over what ${t.name} owns`,
      testid: 'dialog-handover',
      fields: [
        field('New owner', to, 'Its zones and suffixes must cover every set handed over, or nothing is (the refusal names the sets).'),
        field('Only in zone', zone),
        field('Only under suffix', suffix),
      ],
      read: () => ({ old: t.name, new: to.value.trim(), zone: zone.value.trim(), suffix: suffix.value.trim() }),
      describe: (r) =>
        `make tenant "${r.new}" the owner of everything tenant "${t.name}" owns${r.zone ? ` in zone ${r.zone}` : ''}${r.suffix ? ` under ${r.suffix}` : ''} — its exclusive record sets and its targets of shared sets — in one transaction, with no OVH call. Undo it with dnsplane journal revert (the entry it writes).`,
      method: 'HandoverTenant',
      verb: 'Hand over',
      danger: true,
      result: (a) =>
        h(
          'p',
          { 'data-testid': 'handover-result' },
          `Handed over ${(a.sets ?? []).length} ownership row(s) to "${a.new}" (no OVH call); journal entry ${a.journalId || '— (nothing to move)'}.`,
        ),
      refresh,
    });
  };

  const drain = (t) => {
    const state = h('p', { class: 'muted', 'data-testid': 'drain-state' }, 'Reading what it owns…');
    const action = h(
      'select',
      { id: 'dr-action', 'data-testid': 'dr-action' },
      h('option', { value: 'drain' }, 'Drain: withdraw its targets of shared sets from OVH'),
      h('option', { value: 'undrain' }, 'Undrain: put back what a drain withdrew'),
    );
    const zone = input('dr-zone', 'empty: every zone');
    const owned = ownership(t, state, (rows) => {
      const shared = rows.filter((r) => r.shared);
      const drained = shared.filter(isDrained);
      if (drained.length > 0 && drained.length === shared.length) action.value = 'undrain';
      return shared.length === 0
        ? `Tenant "${t.name}" owns no target of a shared set: a drain has nothing to withdraw.`
        : `Tenant "${t.name}" owns ${plural(shared.length, 'target')} of shared sets (${perZone(shared).join(', ')}): ${drained.length} drained now, ${shared.length - drained.length} not.`;
    });
    let moving = [];
    writeDialog(page, {
      title: `Drain or undrain ${t.name}`,
      testid: 'dialog-drain',
      fields: [
        state,
        field('Action', action, 'For maintenance: its external-dns may keep writing meanwhile; nothing comes back until Undrain. Its exclusive sets stay.'),
        field('Only in zone', zone),
      ],
      read: async () => {
        const r = { name: t.name, zone: zone.value.trim(), undrain: action.value === 'undrain' };
        const shared = (await owned).filter((e) => e.shared && (r.zone === '' || e.zone === r.zone));
        moving = shared.filter((e) => isDrained(e) === r.undrain);
        return r;
      },
      describe: (r) => {
        const where = r.zone ? ` in zone ${r.zone}` : '';
        if (moving.length === 0)
          return `nothing: tenant "${t.name}" has no target of a shared set ${r.undrain ? 'drained' : 'left to withdraw'}${where}, so no OVH call is expected.`;
        const zones = zonesOf(moving);
        const calls = r.undrain
          ? `at most ${moving.length} POST /domain/zone/…/record (one per target) and ${zones.length} POST …/refresh (one per zone)`
          : `at most ${moving.length} DELETE /domain/zone/…/record/ID (one per target; a set's last published target is kept, never withdrawn) and ${zones.length} POST …/refresh (one per zone)`;
        return r.undrain
          ? `put back on OVH the ${plural(moving.length, 'target')} of shared sets a drain withdrew from tenant "${t.name}"${where} (${perZone(moving).join(', ')}), listed below. OVH calls expected: ${calls}. Journalled per zone.`
          : `withdraw from OVH now the ${plural(moving.length, 'target')} of shared sets tenant "${t.name}" owns${where} (${perZone(moving).join(', ')}), listed below, until Undrain. OVH calls expected: ${calls}. Its exclusive sets stay. Journalled per zone.`;
      },
      detail: () =>
        moving.length
          ? h(
              'ul',
              { class: 'mono small', 'data-testid': 'drain-targets' },
              moving.map((e) => h('li', null, targetLine(e))),
            )
          : null,
      method: 'DrainTenant',
      // The confirm button says which (read when the confirm step is drawn).
      get verb() {
        return action.value === 'undrain' ? 'Undrain' : 'Drain';
      },
      danger: true,
      result: (a, r) => {
        const targets = a.targets ?? [];
        const calls = a.calls ?? [];
        const moved = targets.filter((x) => x.state !== 'kept').length;
        return h(
          'div',
          { 'data-testid': 'drain-result' },
          h(
            'p',
            { 'data-testid': 'drain-summary' },
            `Tenant "${a.tenant}" ${r.undrain ? 'undrained' : 'drained'}: ${moved} target(s) ${r.undrain ? 'restored' : 'withdrawn'}, ${targets.length - moved} kept; ${plural(calls.length, 'OVH call')}; ${journalIds(a.journalIds ?? [])}.`,
          ),
          targets.length
            ? h(
                'ul',
                { class: 'mono small', 'data-testid': 'drain-outcome' },
                targets.map((x) => h('li', null, `${targetLine(x)}: ${x.state}${x.why ? ` (${x.why})` : ''}`)),
              )
            : null,
          callList(calls, 'drain-calls'),
        );
      },
      refresh,
    });
  };

  const retire = (t) => {
    const state = h('p', { class: 'muted', 'data-testid': 'retire-state' }, 'Reading what it owns…');
    const how = h(
      'select',
      { id: 'rt-how', 'data-testid': 'rt-how' },
      h('option', { value: 'handover' }, 'Hand over all it owns to another tenant (no OVH call)'),
      h('option', { value: 'delete' }, 'Delete its records (an apply: threshold and approvals apply)'),
    );
    const to = input('rt-to', 'the tenant that takes over');
    const planId = input('rt-plan', 'empty: plan the deletion now (Review shows it)');
    const toField = field('New owner', to, 'Its zones and suffixes must cover every set, or nothing moves and the tenant is not retired.');
    const planField = field(
      'Plan id',
      planId,
      'Review stores a plan of its desired state "nothing" in the zones it owns (nothing is sent) and shows it. Over the change threshold, a second admin approves that plan (Plans page) and the retire is run again with its id here.',
    );
    const show = () => {
      toField.hidden = how.value !== 'handover';
      planField.hidden = how.value !== 'delete';
    };
    how.addEventListener('change', show);
    show();
    const owned = ownership(t, state, (rows) =>
      rows.length === 0
        ? `Tenant "${t.name}" owns nothing.`
        : `Tenant "${t.name}" owns ${plural(rows.filter((r) => !r.shared).length, 'record set')} and ${plural(rows.filter((r) => r.shared).length, 'target')} of shared sets (${perZone(rows).join(', ')}).`,
    );
    let rows = [];
    let plan = null;
    let approvedBy = '';
    writeDialog(page, {
      title: `Retire ${t.name}`,
      testid: 'dialog-retire',
      fields: [state, field('How', how), toField, planField],
      read: async () => {
        rows = await owned;
        plan = null;
        approvedBy = '';
        if (how.value === 'handover') {
          const handoverTo = to.value.trim();
          if (handoverTo === '') throw new Error('New owner: name the tenant that takes over what it owns');
          return { name: t.name, handoverTo, deleteRecords: false, planId: '' };
        }
        const id = planId.value.trim();
        if (id !== '') {
          const got = await adminApi('GetPlan', { id });
          if (got.summary?.tenant !== t.name) throw new Error(`Plan id: plan ${id} is tenant "${got.summary?.tenant ?? ''}"'s, not "${t.name}"'s`);
          plan = got.plan ?? null;
          approvedBy = got.summary?.approvedBy ?? '';
        } else if (rows.length > 0) {
          const request = { desired: { zones: zonesOf(rows), endpoints: [] }, policy: 'POLICY_SYNC' };
          plan = (await adminApi('PlanAs', { tenant: t.name, request })).plan ?? null;
        }
        return { name: t.name, handoverTo: '', deleteRecords: true, planId: plan?.id ?? '' };
      },
      describe: (r) => {
        const then = `then disable tenant "${t.name}" (its token stops working at once) and mark it retired, in one journal entry.`;
        if (!r.deleteRecords)
          return `hand everything tenant "${t.name}" owns — ${plural(rows.length, 'ownership row')}${rows.length ? ` (${perZone(rows).join(', ')})` : ''} — over to tenant "${r.handoverTo}", in one transaction with no OVH call; ${then}`;
        if (!plan) return `delete nothing: tenant "${t.name}" owns no record, so no plan and no OVH call; ${then}`;
        const n = countPlan(plan);
        const over = (plan.zones ?? []).filter((z) => z.threshold?.exceeded);
        return [
          `apply plan ${plan.id} as tenant "${t.name}": ${n.delete} to delete, ${n.update} to update (a shared set loses only its targets) in ${(plan.zones ?? []).map((z) => z.zone).join(', ')}, with the ${plural(n.calls, 'OVH call')} listed in the plan below; ${then}`,
          over.length ? ' ' : null,
          over.length
            ? h(
                'span',
                { class: 'over', 'data-testid': 'retire-over' },
                `Over the change threshold in ${over.map((z) => `${z.zone} (${(z.threshold.updates ?? 0) + (z.threshold.deletes ?? 0)} of ${z.threshold.owned ?? 0} sets, max ${z.threshold.maxPercent ?? 0}%)`).join(', ')}: ${
                  approvedBy
                    ? `approved by ${approvedBy}.`
                    : "without a second admin's approval of this plan nothing is sent and the tenant is not retired (the refusal says so); approve it on the Plans page, then Retire again with its id."
                }`,
              )
            : null,
        ];
      },
      detail: (r) =>
        r.deleteRecords && plan
          ? h(
              'div',
              { 'data-testid': 'retire-plan-view' },
              h(
                'p',
                { class: 'muted' },
                'The plan, stored as ',
                h('code', { 'data-testid': 'retire-plan' }, plan.id),
                ' (nothing is sent before you confirm):',
              ),
              planDiff(plan, { applyHint: false }),
            )
          : null,
      method: 'RetireTenant',
      verb: 'Retire',
      danger: true,
      result: (a) => {
        const calls = a.calls ?? [];
        const ho = a.handover;
        return h(
          'div',
          { 'data-testid': 'retire-result' },
          h(
            'p',
            { 'data-testid': 'retire-how' },
            ho
              ? `Handed over ${(ho.sets ?? []).length} ownership row(s) to "${ho.new}" (no OVH call); journal entry ${ho.journalId || '— (nothing to move)'}.`
              : a.planId
                ? `Its records deleted by plan ${a.planId}: ${plural(calls.length, 'OVH call')}.`
                : 'It owned no record: nothing deleted, no OVH call.',
          ),
          callList(calls, 'retire-calls'),
          h('p', { 'data-testid': 'retire-summary' }, `Tenant "${a.tenant}" retired and disabled; journal entry ${a.journalId}.`),
        );
      },
      refresh,
    });
  };

  return { handover, drain, retire };
}
