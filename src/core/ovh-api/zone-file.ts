/**
 * The served OVH API's zone file calls (issue 43; OVH's schema: GET …/export, POST …/import answering
 * a domain.zone.Task, GET …/task and …/task/{id}), over the tenant's records:
 *
 * - export: the tenant's published records (ownRecords: its sets, its targets of shared sets) as OVH
 *   writes a zone file — `$TTL`, the SOA, one line per record, OVH's SPF, DKIM and DMARC as TXT (as
 *   OVH's own export writes them), no record ids. From the cache: 0 OVH calls.
 * - import: the file is the tenant's desired state of the zone — one apply of kind `desired`, policy
 *   SYNC over the zone (every set it owns there and not in the file goes), all or nothing: a record
 *   at a name another tenant owns (or nobody, with records there) refuses the whole import, nothing
 *   sent; the change threshold and protected names judge it as any apply. A TXT value the file gives
 *   at a name where the tenant's SPF, DKIM or DMARC record holds it stays in that record (the export
 *   wrote it as TXT: export then import plans no change). The SOA and the apex NS are skipped.
 * - tasks: an import is a task whose id is its journal row (a finished audit row when it changed
 *   nothing): `done`, `error` (failed, rolled back), `doing` while in flight. A tenant sees its own.
 */
import { InvalidInputError } from '../../dns/errors.js';
import { splitFamily } from '../../dns/txt-family.js';
import { isRecordType, isTxtFamily, RECORD_TYPES, TXT_FAMILY, type RecordType } from '../../dns/types.js';
import { ovhRecordSetName, ovhTargetToCanonical, recordsToEndpoints } from '../../ovh/mapping.js';
import type { OvhRecord } from '../../ovh/types.js';
import { formatZoneFile, parseZoneFileLines, type ZoneFileLine, zoneFileTarget } from '../../ovh/zonefile.js';
import * as store from '../../store/index.js';
import { apply } from '../apply/index.js';
import type { CoreContext } from '../context.js';
import { SOA_TIMERS, soaSerial } from '../dns-door/dns-zone.js';
import { NotFoundError } from '../errors.js';
import type { Tenant } from '../tenants/tenants.js';
import { ownRecords, tenantBase, tenantZone } from './draft-view.js';

/** The summary an import's journal row starts with (how a row is known for a task). */
const IMPORT = 'OVH API import';

/** GET …/export: the tenant's records of the zone as OVH writes a zone file. */
export async function exportTenantZone(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<string> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  const { base, ids } = await tenantBase(ctx, tenant, zone);
  const own = [...(await ownRecords(base, tenant, zone, ids)).values()];
  const apexNs = base.endpoints.find((e) => e.dnsName === zone && e.recordType === 'NS');
  // OVH's export writes SPF, DKIM and DMARC as TXT.
  const entries = own.map((r) => {
    const type = r.fieldType.toUpperCase();
    const target = zoneFileTarget(type, r.target, zone);
    return { subDomain: r.subDomain, fieldType: isTxtFamily(type) ? 'TXT' : type, ttl: r.ttl, target };
  });
  return formatZoneFile(zone, entries, {
    comments: [],
    soa: { mname: apexNs?.targets[0] ?? `ns.${zone}`, rname: `hostmaster.${zone}`, serial: soaSerial(base.generation), ...SOA_TIMERS },
  });
}

/** A domain.zone.Task as OVH's schema has it. */
export interface ZoneTask {
  id: number;
  function: 'ZoneImport';
  status: 'todo' | 'doing' | 'done' | 'error';
  comment: string | null;
  creationDate: string;
  todoDate: string;
  doneDate: string | null;
  lastUpdate: string | null;
  canAccelerate: boolean;
  canCancel: boolean;
  canRelaunch: boolean;
}

function taskOf(row: store.JournalEntry): ZoneTask {
  const status = row.state === 'in_flight' ? 'doing' : row.state === 'done' ? 'done' : 'error';
  const summary = summaryOf(row) ?? '';
  const error = row.result !== null && typeof row.result === 'object' && 'error' in row.result ? String(row.result['error']) : undefined;
  return {
    id: Number(row.id),
    function: 'ZoneImport',
    status,
    comment: status === 'error' ? `${summary}: ${error ?? 'failed, rolled back'}` : summary,
    creationDate: row.startedAt.toISOString(),
    todoDate: row.startedAt.toISOString(),
    doneDate: row.finishedAt?.toISOString() ?? null,
    lastUpdate: (row.finishedAt ?? row.startedAt).toISOString(),
    canAccelerate: false,
    canCancel: false,
    canRelaunch: false,
  };
}

function summaryOf(row: store.JournalEntry): string | undefined {
  const intent = row.intent;
  return intent !== null && typeof intent === 'object' && !Array.isArray(intent) && typeof intent['summary'] === 'string' ? intent['summary'] : undefined;
}

const isImport = (row: store.JournalEntry) => summaryOf(row)?.startsWith(IMPORT) === true;

/**
 * The file's records, each TXT at a name where the tenant's SPF, DKIM or DMARC record holds its value
 * given back that record's type (dns/txt-family.ts splitFamily); InvalidInputError naming the line.
 */
function fileRecords(zone: string, lines: readonly ZoneFileLine[], own: readonly OvhRecord[]): OvhRecord[] {
  const records: OvhRecord[] = [];
  const txtByName = new Map<string, { subDomain: string; values: string[]; ttl: number }>();
  for (const l of lines) {
    if (l.type === 'NS' && l.subDomain === '') continue;
    if (!isRecordType(l.type)) throw new InvalidInputError(`zoneFile line ${l.line}`, `type ${l.type} is not one of OVH's (${RECORD_TYPES.join(', ')})`);
    const text = isTxtFamily(l.type) ? ovhTargetToCanonical(l.type, l.target, zone) : undefined;
    if (l.type !== 'TXT' || text === undefined) {
      records.push({ id: `line ${l.line}`, zone, subDomain: l.subDomain, fieldType: l.type, target: l.target, ttl: l.ttl });
      continue;
    }
    const name = ovhRecordSetName(l.subDomain, zone);
    const at = txtByName.get(name) ?? { subDomain: l.subDomain, values: [], ttl: l.ttl };
    at.values.push(text);
    at.ttl = Math.min(at.ttl, l.ttl);
    txtByName.set(name, at);
  }
  // The tenant's TXT family values at those names, in one pass over its records.
  const held = new Map<string, Map<RecordType, string[]>>();
  for (const r of own) {
    const type = r.fieldType.toUpperCase();
    if (!isTxtFamily(type)) continue;
    const name = ovhRecordSetName(r.subDomain, zone);
    if (!txtByName.has(name)) continue;
    const t = ovhTargetToCanonical(type as RecordType, r.target, zone);
    if (t === undefined) continue;
    let current = held.get(name);
    if (!current) held.set(name, (current = new Map()));
    const values = current.get(type as RecordType);
    if (values) values.push(t);
    else current.set(type as RecordType, [t]);
  }
  for (const [name, at] of txtByName) {
    const split = splitFamily(held.get(name) ?? new Map(), at.values);
    for (const type of TXT_FAMILY) {
      for (const target of split.get(type) ?? []) records.push({ id: name, zone, subDomain: at.subDomain, fieldType: type, target, ttl: at.ttl });
    }
  }
  return records;
}

/**
 * POST …/import: the zone file applied as the tenant's desired state of the zone (see the module
 * comment). `zone`: as tenantZone answered it for this tenant — the route checks the zone before the
 * body, as OVH does, and the zone is not read again here (the apply judges the tenant's right to it
 * in any case). Throws what the apply refused with (PermissionDenied for names it may not touch,
 * ThresholdError, InvalidInputError naming the line); answers the task.
 */
export async function importZoneFile(ctx: CoreContext, tenant: Tenant, zone: string, zoneFile: string, applicationKey: string): Promise<ZoneTask> {
  let lines: ZoneFileLine[];
  try {
    lines = parseZoneFileLines(zoneFile, zone);
  } catch (e) {
    throw new InvalidInputError('zoneFile', (e as Error).message);
  }
  const { base, ids } = await tenantBase(ctx, tenant, zone);
  const records = fileRecords(zone, lines, [...(await ownRecords(base, tenant, zone, ids)).values()]);
  const mapping = recordsToEndpoints(records, zone);
  const invalid = mapping.warnings.find((w) => / is not a valid /.test(w.message));
  if (invalid) throw new InvalidInputError(`zoneFile ${invalid.recordIds[0]}`, invalid.message.replace(/; kept as it is$/, ''));
  const summary = `${IMPORT} by application key ${applicationKey}: ${lines.length} record(s)`;
  const result = await apply(ctx, tenant, {
    input: {
      kind: 'desired',
      zones: [zone],
      policy: 'sync',
      allOrNothing: true,
      origin: summary,
      endpoints: mapping.endpoints.map((e) => ({ dnsName: e.dnsName, recordType: e.recordType, targets: e.targets, ttl: e.ttl })),
    },
  });
  const z = result.zones.find((r) => r.zone === zone);
  if (!z) throw new Error(`the import of zone ${zone} applied nothing to it`);
  if (z.status === 'refused' || z.status === 'stale') throw z.error ?? new Error(`the import of zone ${zone} was ${z.status}`);
  if (z.journalId) {
    const row = await store.getJournalEntry(ctx.pool, z.journalId);
    if (row) return taskOf(row);
  }
  if (z.status === 'failed') throw z.error ?? new Error(`the import of zone ${zone} failed`);
  // Nothing to change (or a dry run): the task is an audit row, done.
  const row = await store.withTransaction(ctx.pool, async (tx) => {
    const id = await store.insertIntent(tx, {
      zone,
      tenantId: tenant.id,
      intent: { kind: 'ovh-import', summary: `${summary}, no change`, operations: [], names: [] },
    });
    return store.finishJournal(tx, id, 'done', { summary: `${summary}, no change` });
  });
  return taskOf(row);
}

/** GET …/task/{id}: the tenant's import task of that id in the zone, else OVH's 404. */
export async function zoneTask(ctx: CoreContext, tenant: Tenant, rawZone: string, id: string): Promise<ZoneTask> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  const row = await store.getJournalEntry(ctx.pool, id);
  if (!row || row.zone !== zone || row.tenantId !== tenant.id || !isImport(row))
    throw new NotFoundError('record', id, `The requested object (id = ${id}) does not exist`);
  return taskOf(row);
}

/** GET …/task: the ids of the tenant's latest import tasks in the zone (at most 1,000), newest first. */
export async function zoneTaskIds(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<number[]> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  const rows = await store.listJournal(ctx.pool, { zone, tenantId: tenant.id, limit: 1000 });
  return rows.filter(isImport).map((r) => Number(r.id));
}
