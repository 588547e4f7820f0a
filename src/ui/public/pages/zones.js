// Zones: generation, record count, last sync, drift state, applies waiting for their rollback, and the
// latest publishes' delays until the zone's authoritative servers answered them.
import { zoneApi } from '../api.js';
import { ago, badge, fmtTime, h } from '../dom.js';
import { pagedTable } from '../table.js';
import { recentCell } from '../visibility.js';

const DRIFT_TEXT = { unchecked: 'not checked yet', in_sync: 'in sync', drift_found: 'drift found' };

function driftCell(z) {
  const d = z.drift ?? {};
  const state = d.state ?? 'unchecked';
  const parts = [badge(DRIFT_TEXT[state] ?? state, state)];
  if (d.lastCheck) parts.push(h('div', { class: 'muted small', title: ago(d.lastCheck) }, `checked ${fmtTime(d.lastCheck)}`));
  if (d.lastFound) {
    parts.push(h('div', { class: 'muted small', title: ago(d.lastFound) },
      `last found ${fmtTime(d.lastFound)}: +${d.added ?? 0} −${d.removed ?? 0} ~${d.updated ?? 0}`));
  }
  return parts;
}

export async function zonesPage(page, { who, stale }) {
  const res = await zoneApi('ListZones', {});
  if (stale()) return;
  const zones = res.zones ?? [];
  page.append(
    h('h1', null, 'Zones'),
    h('p', { class: 'muted' }, who.admin ? 'Every zone dnsplane manages.' : `The zones of tenant "${who.tenant}".`,
      (res.suffixes ?? []).length ? ` Writes limited to: ${res.suffixes.join(', ')}.` : ''),
    pagedTable({
      testid: 'zones',
      rows: zones,
      empty: 'No zone.',
      rowAttrs: (z) => ({ 'data-zone': z.name }),
      columns: [
        { title: 'Zone', cell: (z) => h('a', { href: `#/zones/${encodeURIComponent(z.name)}` }, z.unicodeName ? `${z.unicodeName} (${z.name})` : z.name) },
        { title: 'State', cell: (z) => badge(z.state ?? 'unsynced') },
        { title: 'Generation', class: 'num', cell: (z) => z.generation ?? '0' },
        { title: 'Records', class: 'num', cell: (z) => String(z.recordCount ?? 0) },
        { title: 'Last sync', class: 'time', cell: (z) => h('span', { title: ago(z.lastSync) }, fmtTime(z.lastSync)) },
        { title: 'Drift', cell: driftCell },
        { title: 'Applies in flight', class: 'num', cell: (z) => ((z.inFlightApplies ?? 0) > 0 ? badge(`${z.inFlightApplies} awaiting rollback`, 'in_flight') : '0') },
        { title: 'Publish → visible (latest first)', cell: (z) => recentCell(z.recentPublishes) },
      ],
    }),
  );
}
