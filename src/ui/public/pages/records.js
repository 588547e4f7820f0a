// One zone's records with their owners, filtered by name, type and owner, a page at a time.
import { adminApi, zoneApi } from '../api.js';
import { badge, clear, h, targetText } from '../dom.js';
import { pagedTable } from '../table.js';

const SHARED_LABEL = 'dnsplane/shared';
const CHECK_LABEL = 'dnsplane/health-check';
const ANY = '';
const NOBODY = '\u0000nobody';

export async function recordsPage(page, { arg: zone, who, stale }) {
  const res = await zoneApi('Records', { zones: [zone], includeForeign: true });
  if (stale()) return;
  const z = (res.zones ?? [])[0] ?? { endpoints: [] };
  const all = z.endpoints ?? [];
  const ownerOf = (e) => e.labels?.owner ?? '';
  const types = [...new Set(all.map((e) => e.recordType))].sort();
  const owners = [...new Set(all.map(ownerOf))].sort();

  const name = h('input', { type: 'search', placeholder: 'name contains…', 'data-testid': 'filter-name', 'aria-label': 'name filter' });
  const type = h(
    'select',
    { 'data-testid': 'filter-type', 'aria-label': 'type filter' },
    h('option', { value: ANY }, 'any type'),
    types.map((t) => h('option', { value: t }, t)),
  );
  const owner = h(
    'select',
    { 'data-testid': 'filter-owner', 'aria-label': 'owner filter' },
    h('option', { value: ANY }, 'any owner'),
    owners.map((o) => (o === '' ? h('option', { value: NOBODY }, '(no owner)') : h('option', { value: o }, o))),
  );
  const count = h('p', { class: 'muted', 'data-testid': 'count' });
  const holder = h('div');

  const draw = () => {
    const n = name.value.trim().toLowerCase();
    const rows = all.filter(
      (e) =>
        (n === '' || e.dnsName.toLowerCase().includes(n)) &&
        (type.value === ANY || e.recordType === type.value) &&
        (owner.value === ANY || (owner.value === NOBODY ? ownerOf(e) === '' : ownerOf(e) === owner.value)),
    );
    count.textContent = rows.length === all.length ? `${all.length} record sets` : `${rows.length} of ${all.length} record sets match`;
    clear(holder);
    holder.append(
      pagedTable({
        testid: 'records',
        rows,
        empty: all.length ? 'No record set matches these filters.' : 'This zone has no records you may see.',
        columns: [
          { title: 'Name', cell: (e) => e.dnsName },
          { title: 'Type', cell: (e) => e.recordType },
          { title: 'Targets', class: 'targets', cell: targetText },
          { title: 'TTL', class: 'num', cell: (e) => ((e.ttl ?? 0) === 0 ? 'default' : String(e.ttl)) },
          {
            title: 'Owner',
            cell: (e) => [
              ownerOf(e) === '' ? h('span', { class: 'muted' }, '(no owner)') : ownerOf(e),
              e.labels?.[SHARED_LABEL] === 'true' ? [' ', badge('shared')] : null,
            ],
          },
          { title: 'Health', class: 'health', cell: healthCell },
        ],
      }),
    );
  };
  let timer;
  name.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(draw, 150);
  });
  type.addEventListener('change', draw);
  owner.addEventListener('change', draw);

  page.append(
    h('p', null, h('a', { href: '#/zones' }, '← Zones')),
    h('h1', null, `Records of ${zone}`),
    h(
      'p',
      { class: 'muted' },
      `Generation ${z.generation ?? '0'} · served from dnsplane's cache (no OVH call)`,
      who.admin ? '' : ` · records of other tenants are shown read-only`,
    ),
    who.admin ? exportButton(zone) : null,
    h('div', { class: 'filters' }, name, type, owner),
    count,
    holder,
  );
  draw();
}

// Each target's state (Records' targetStates: healthy, failing, withdrawn and why, since when, the last
// answer in the badge's title) and the set's health check (docs/failover.md).
function healthCell(e) {
  const states = (e.targetStates ?? []).map((s) => {
    const word = String(s.status ?? '')
      .replace(/^TARGET_STATUS_/, '')
      .toLowerCase();
    const title = [s.reason, s.since ? `since ${s.since}` : '', s.detail].filter(Boolean).join(' · ');
    return [h('span', { class: `badge ${word}`, title, 'data-testid': 'target-state' }, `${s.target} ${word}`), ' '];
  });
  const check = e.labels?.[CHECK_LABEL];
  return [states, check ? h('span', { class: 'muted' }, `check ${check}`) : null];
}

// Admins: the zone as an RFC 1035 zone file (AdminService.ExportZone, from the cache, owners as
// comments), saved by the browser as ZONE.zone. Nothing is written anywhere.
function exportButton(zone) {
  const status = h('span', { class: 'muted', 'data-testid': 'export-status' });
  const button = h(
    'button',
    {
      type: 'button',
      'data-testid': 'export-zone',
      onclick: async () => {
        button.disabled = true;
        status.textContent = ' exporting…';
        try {
          const res = await adminApi('ExportZone', { zone, includeOwners: true });
          const url = URL.createObjectURL(new Blob([res.zoneFile ?? ''], { type: 'text/dns' }));
          const a = h('a', { href: url, download: `${zone}.zone` });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(url), 60_000);
          status.textContent = ` ${res.recordCount ?? 0} records at generation ${res.generation ?? '0'} saved as ${zone}.zone`;
        } catch (e) {
          status.textContent = ` export failed: ${e.message}`;
        } finally {
          button.disabled = false;
        }
      },
    },
    'Download zone file',
  );
  return h('p', null, button, status);
}
