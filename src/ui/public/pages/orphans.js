// Orphans (AdminService.ListOrphans): what nobody will write again — record sets owned by disabled
// tenants or by tenants silent past 30 days, with how long their owner has been quiet, and the records
// of managed zones nobody owns. Read only: resolve them with `dnsplane tenant handover`, `tenant retire`
// or AssignOwnership (docs/ownership.md "Orphans").
import { adminApi } from '../api.js';
import { badge, h } from '../dom.js';
import { pagedTable } from '../table.js';

function age(seconds) {
  const s = Number(seconds ?? 0);
  return s >= 86400 ? `${Math.floor(s / 86400)}d` : s >= 3600 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 60)}m`;
}

export async function orphansPage(page, { stale }) {
  const res = await adminApi('ListOrphans', {});
  if (stale()) return;
  const rows = res.orphans ?? [];
  page.append(
    h('h1', null, 'Orphans'),
    h(
      'p',
      { class: 'muted' },
      `What nobody will write again: sets of disabled tenants, of tenants silent for ${age(res.silentForSeconds)}, and unowned records. `,
      'Hand them over (dnsplane tenant handover), retire their owner (dnsplane tenant retire) or assign them.',
    ),
    pagedTable({
      testid: 'orphans',
      rows,
      empty: 'No orphan.',
      rowAttrs: (o) => ({ 'data-orphan': `${o.dnsName} ${o.recordType} ${o.target ?? ''}`.trim() }),
      columns: [
        { title: 'Zone', cell: (o) => o.zone },
        { title: 'Name', cell: (o) => o.dnsName },
        { title: 'Type', cell: (o) => o.recordType },
        { title: 'Target', cell: (o) => o.target || (o.targets ?? []).join(', ') || '—' },
        { title: 'Owner', cell: (o) => o.tenant || '—' },
        { title: 'Why', cell: (o) => badge(o.reason) },
        { title: 'Quiet for', class: 'num', cell: (o) => (o.reason === 'unowned' ? '—' : age(o.ageSeconds)) },
      ],
    }),
  );
}
