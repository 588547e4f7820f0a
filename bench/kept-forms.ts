/**
 * bench/kept-forms — `npm run bench:kept-forms`: what each form a replica keeps of a zone weighs on
 * V8's heap, measured, beside what the read cache accounts it as (core/reads/sizing.ts,
 * core/reads/zone-base.ts baseBytes) — the figures docs/records-and-reads.md ("What a replica keeps
 * per zone") and the start log's estimate of an estate rest on. Not part of `npm test`.
 *
 * One zone as bench/estate makes it (KEPT_N records: N/2 names, each an A, AAAA or CNAME and the TXT
 * record external-dns's registry wrote for it; every record set owned, as after the registry's
 * import, by one of KEPT_T tenants in turn), its rows made as the store makes them (pg's fresh
 * strings; zone, type and tenant interned), built in this process the way the read cache builds it:
 * the base, its answers, their binary encodings (the includeForeign view and every owner's), the
 * base's index, the apply path's view made from the base, and the base patched after one change (what
 * it does not share with the first: what a view keeps alive of its older base). After each, a full collection and the
 * heap's growth (encodings: their bytes, outside the heap). Needs --expose-gc (the npm script passes it).
 *
 * Environment: KEPT_N (50000), KEPT_T (100).
 */
import { encodeZoneRecords } from '../src/api/records-binary.js';
import { cutAnswers } from '../src/core/reads/answers.js';
import { baseIndexOf, INDEX_BYTES_PER_RECORD } from '../src/core/reads/base-index.js';
import { answersBytes, BUILD_BYTES_PER_RECORD } from '../src/core/reads/sizing.js';
import { baseBytes, zoneBaseOf } from '../src/core/reads/zone-base.js';
import { patchBase } from '../src/core/reads/base-patch.js';
import { PINNED_BYTES_PER_RECORD, ZoneMemory } from '../src/core/reads/zone-memory.js';
import type { ZoneRecords } from '../src/core/records/records.js';
import type { Endpoint } from '../src/dns/types.js';
import { Slicer } from '../src/core/slices.js';
import { recordOf, type OvhRecord } from '../src/ovh/types.js';
import type { OwnershipRow } from '../src/store/index.js';
import { intern } from '../src/store/intern.js';
import { positiveEnv } from './lib.js';

const N = Math.floor(positiveEnv('KEPT_N', 50_000));
const T = Math.floor(positiveEnv('KEPT_T', 100));
const ZONE = 'z0.estate.bench';
const TYPES = ['A', 'AAAA', 'CNAME'] as const;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('bench/kept-forms needs node --expose-gc: run it with npm run bench:kept-forms');

/** The heap in use after full collections. */
function heapNow(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

/** A string of its own, as pg makes one per column of every row. */
const fresh = (s: string): string => Buffer.from(s).toString();

function rows(): { records: OvhRecord[]; ownership: OwnershipRow[] } {
  const records: OvhRecord[] = [];
  const ownership: OwnershipRow[] = [];
  const own = (dnsName: string, recordType: string, owner: number) =>
    ownership.push({
      zone: intern(fresh(ZONE)),
      dnsName: fresh(dnsName),
      recordType: intern(fresh(recordType)),
      target: '',
      tenantId: intern(fresh(String(1000 + owner))),
      tenantName: intern(fresh(`cluster-${owner}`)),
      shared: false,
      createdMs: 1_796_000_000_000 + owner,
    });
  for (let i = 0; i < N / 2; i++) {
    const type = TYPES[i % 3]!;
    const target = type === 'A' ? `10.0.${(i >> 8) & 255}.${i & 255}` : type === 'AAAA' ? `2001:db8::${i.toString(16)}` : `h${i}.example.net.`;
    const owner = i % T;
    const txt = `${type.toLowerCase()}-h${i}`;
    const row = (id: number, subDomain: string, fieldType: string, t: string) =>
      recordOf(ZONE, { id: fresh(String(5_000_000_000 + id)), subDomain: fresh(subDomain), fieldType: intern(fresh(fieldType)), target: fresh(t), ttl: 300 });
    records.push(row(2 * i, `h${i}`, type, target));
    records.push(row(2 * i + 1, txt, 'TXT', `heritage=external-dns,external-dns/owner=cluster-${owner},external-dns/resource=ingress/default/h${i}`));
    own(`h${i}.${ZONE}`, type, owner);
    own(`${txt}.${ZONE}`, 'TXT', owner);
  }
  return { records, ownership };
}

const kept: unknown[] = [];
const table: string[][] = [];
let before = heapNow();
function step(form: string, accounted: number | undefined, value: unknown): void {
  kept.push(value);
  const now = heapNow();
  const grew = now - before;
  before = now;
  table.push([
    form,
    `${(grew / 2 ** 20).toFixed(1)} MiB`,
    `${Math.round(grew / N)}`,
    accounted === undefined ? '—' : `${Math.round(accounted / N)}`,
    accounted === undefined ? '—' : (accounted / grew).toFixed(2),
  ]);
}

async function main(): Promise<void> {
  const slicer = new Slicer(Number.POSITIVE_INFINITY);
  const read = rows();
  step('the rows, as read (records and ownership)', undefined, read);
  const base = await zoneBaseOf(ZONE, 1n, read.records, read.ownership, slicer);
  // The rows become the base's (zoneBaseOf keeps them): the base's accounted bytes cover both.
  step('the base: the rows above, plus endpoints and sets', undefined, base);
  const baseTotal = table.slice(-2).reduce((a, r) => a + Number(r[2]), 0);
  const answersAt = table.length + 1;
  table.push([
    '  the base with its rows, together',
    `${((baseTotal * N) / 2 ** 20).toFixed(1)} MiB`,
    `${baseTotal}`,
    `${Math.round(baseBytes(base) / N)}`,
    (baseBytes(base) / N / baseTotal).toFixed(2),
  ]);
  const answers = await cutAnswers(ZONE, base, slicer);
  step('its answers (includeForeign, and every owner slice)', answersBytes(answers), answers);
  let encoded = 0;
  const z: ZoneRecords = { zone: ZONE, generation: 1n, notModified: false, endpoints: answers.all as Endpoint[] };
  const all = await encodeZoneRecords(z, slicer);
  encoded += all.byteLength;
  kept.push(all);
  for (const list of answers.byOwner.values()) {
    const b = await encodeZoneRecords({ ...z, endpoints: list as Endpoint[] }, slicer);
    encoded += b.byteLength;
    kept.push(b);
  }
  table.push([
    'binary encodings, every view (outside the heap)',
    `${(encoded / 2 ** 20).toFixed(1)} MiB`,
    `${Math.round(encoded / N)}`,
    `${Math.round(encoded / N)}`,
    '1.00',
  ]);
  before = heapNow();
  step("the base's index (Plans, the served OVH API)", N * INDEX_BYTES_PER_RECORD, await baseIndexOf(base, ZONE, slicer));
  const view = await ZoneMemory.fromBase(ZONE, base, slicer);
  step("the apply path's view, made from the base (its index)", 0, view);
  // One apply's change (one record's target), the base patched from it as the read cache patches one:
  // what the two do not share is what the older base holds once the view alone keeps it alive.
  const changed = base.records[2]!;
  const patched = await patchBase(
    base,
    ZONE,
    2n,
    {
      ids: [changed.id],
      rows: [{ id: changed.id, subDomain: changed.subDomain, fieldType: changed.fieldType, target: '10.9.9.9', ttl: 300 }],
      sets: [],
      ownership: [],
      withdrawals: [],
      health: [],
    },
    slicer,
  );
  step('a base patched from it (one record changed): what it does not share', N * PINNED_BYTES_PER_RECORD, patched.base);

  const build = baseTotal + Number(table[answersAt]![2]);
  table.push(['a build (base and answers) against its reservation', '', `${build}`, `${BUILD_BYTES_PER_RECORD}`, (BUILD_BYTES_PER_RECORD / build).toFixed(2)]);

  console.log(
    `bench/kept-forms: one zone of ${N} records (${N / 2} names: A, AAAA or CNAME and its registry TXT), ${N} owned sets, ${T} tenants; node ${process.version}\n`,
  );
  console.log('| form | on the heap | bytes a record | accounted a record | accounted / measured |');
  console.log('|---|---|---|---|---|');
  for (const row of table) console.log(`| ${row.join(' | ')} |`);
  console.log(`\n(${kept.length} forms kept alive while measured)`);
}

await main();
