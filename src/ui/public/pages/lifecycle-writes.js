// The Tenants page's write of a cluster's life (issue 46): Hand over (AdminService.HandoverTenant) —
// everything a tenant owns becomes another's, in one transaction, no OVH call; undone from the
// Journal page's entry with `dnsplane journal revert ID`. Through write.js's confirm step, as every write.
import { h } from '../dom.js';
import { field, writeDialog } from '../write.js';

export function lifecycleWrites(page, { refresh }) {
  const input = (id, placeholder) => h('input', { id, 'data-testid': id, type: 'text', autocomplete: 'off', placeholder });
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
  return { handover };
}
