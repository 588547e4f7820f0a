/**
 * The simulator's zones: for each, the draft (what record calls edit), the published records (what the
 * last refresh copied, what the DNS server serves) and the SOA serial. Every method runs synchronously,
 * so each API call changes the state atomically. Persisted as JSON (see SimState.toJSON).
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { isFieldType, normalizePatch, normalizeRecord, type RecordData } from '../ovhwire/records.js';
import { assertZoneName } from './records.js';
import type { SimCredentials, SimRecord, SimRecordInit } from './types.js';

export interface StoredRecord extends RecordData {
  /** Below 2^53, so a JSON number is exact. */
  id: number;
}

export interface ZoneState {
  name: string;
  draft: Map<number, StoredRecord>;
  published: StoredRecord[];
  /** Serial of the published zone (YYYYMMDDnn style, strictly increasing). */
  serial: number;
  /** ISO time of the last refresh (or creation). */
  lastUpdate: string;
}

/** The state file's shape. */
export interface PersistedState {
  version: 1;
  nextId: number;
  credentials?: SimCredentials;
  zones: Record<string, { serial: number; lastUpdate: string; draft: StoredRecord[]; published: StoredRecord[] }>;
}

/** The first serial of a day: YYYYMMDD00 (UTC). */
function dayBase(now: Date): number {
  return (now.getUTCFullYear() * 10000 + (now.getUTCMonth() + 1) * 100 + now.getUTCDate()) * 100;
}

/** YYYYMMDDnn after `current`: today's first serial, or current + 1 if that is not above it. */
export function nextSerial(current: number, now = new Date()): number {
  return Math.max(current + 1, dayBase(now));
}

function sameRecords(a: readonly StoredRecord[], b: readonly StoredRecord[]): boolean {
  if (a.length !== b.length) return false;
  const key = (r: StoredRecord): string => JSON.stringify([r.id, r.subDomain, r.fieldType, r.target, r.ttl]);
  const left = a.map(key).sort();
  const right = b.map(key).sort();
  return left.every((k, i) => k === right[i]);
}

export class SimState {
  private readonly zones = new Map<string, ZoneState>();
  private nextId: number;
  /** Told of every refresh, with what the zone served before it (the name servers' propagation). */
  onPublish?: (zone: ZoneState, before: { name: string; serial: number; published: readonly StoredRecord[] }) => void;

  constructor(firstId: number) {
    this.nextId = firstId;
  }

  zoneNames(): string[] {
    return [...this.zones.keys()].sort();
  }

  zone(name: string): ZoneState | undefined {
    return this.zones.get(name.toLowerCase());
  }

  /** Adds a zone whose records are both draft and published. */
  addZone(name: string, records: readonly SimRecordInit[], apexNs: readonly string[] = []): ZoneState {
    const zone = name.toLowerCase().replace(/\.$/, '');
    assertZoneName(zone);
    if (this.zones.has(zone)) throw new Error(`zone ${zone} already exists`);
    const given = records.map((r) => normalizeRecord(r, zone));
    // A zone created at OVH starts with its apex NS records; given ones take their place.
    const hasApexNs = given.some((r) => r.fieldType === 'NS' && r.subDomain === '');
    const ns: RecordData[] = hasApexNs
      ? []
      : apexNs.map((host) => ({ subDomain: '', fieldType: 'NS', target: host.endsWith('.') ? host : `${host}.`, ttl: 0 }));
    const data = [...ns, ...given];
    const state: ZoneState = { name: zone, draft: new Map(), published: [], serial: dayBase(new Date()), lastUpdate: new Date().toISOString() };
    for (const d of data) {
      const rec = { id: this.nextId++, ...d };
      state.draft.set(rec.id, rec);
    }
    state.published = [...state.draft.values()].map((r) => ({ ...r }));
    this.zones.set(zone, state);
    return state;
  }

  removeZone(name: string): boolean {
    return this.zones.delete(name.toLowerCase());
  }

  /** Ids of the draft, ascending, optionally filtered by exact fieldType and case-insensitive subDomain. */
  listIds(zone: ZoneState, filter: { fieldType?: string; subDomain?: string }): number[] {
    const sub = filter.subDomain?.toLowerCase();
    return [...zone.draft.values()]
      .filter((r) => (filter.fieldType === undefined || r.fieldType === filter.fieldType) && (sub === undefined || r.subDomain === sub))
      .map((r) => r.id)
      .sort((a, b) => a - b);
  }

  createRecord(zone: ZoneState, data: RecordData): StoredRecord {
    const rec: StoredRecord = { id: this.nextId++, ...data };
    zone.draft.set(rec.id, rec);
    return rec;
  }

  /** Applies a patch after validating the resulting record; the record is unchanged when it throws. */
  updateRecord(zone: ZoneState, rec: StoredRecord, patch: { subDomain?: unknown; target?: unknown; ttl?: unknown }): void {
    Object.assign(rec, normalizePatch(patch, rec.fieldType, zone.name));
  }

  deleteRecord(zone: ZoneState, id: number): boolean {
    return zone.draft.delete(id);
  }

  /** What /refresh does: the draft becomes the published zone and the serial goes up. */
  publish(zone: ZoneState): void {
    const before = { name: zone.name, serial: zone.serial, published: zone.published };
    zone.published = [...zone.draft.values()].sort((a, b) => a.id - b.id).map((r) => ({ ...r }));
    zone.serial = nextSerial(zone.serial);
    zone.lastUpdate = new Date().toISOString();
    this.onPublish?.(zone, before);
  }

  isDeployed(zone: ZoneState): boolean {
    return sameRecords([...zone.draft.values()], zone.published);
  }

  draftList(zone: ZoneState): StoredRecord[] {
    return [...zone.draft.values()].sort((a, b) => a.id - b.id);
  }

  static toSimRecord(zone: string, r: StoredRecord): SimRecord {
    return { id: String(r.id), zone, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl };
  }

  // --- persistence ---

  toJSON(credentials?: SimCredentials): PersistedState {
    const zones: PersistedState['zones'] = {};
    for (const z of this.zones.values()) {
      zones[z.name] = {
        serial: z.serial,
        lastUpdate: z.lastUpdate,
        draft: this.draftList(z).map((r) => ({ ...r })),
        published: z.published.map((r) => ({ ...r })),
      };
    }
    return { version: 1, nextId: this.nextId, ...(credentials ? { credentials } : {}), zones };
  }

  /** Replaces the state by a persisted one. Throws on a malformed file. */
  load(data: PersistedState): void {
    if (data.version !== 1 || typeof data.nextId !== 'number' || typeof data.zones !== 'object') {
      throw new Error('unsupported ovhsim state file');
    }
    const check = (r: StoredRecord): StoredRecord => {
      if (
        typeof r.id !== 'number' ||
        !isFieldType(r.fieldType) ||
        typeof r.subDomain !== 'string' ||
        typeof r.target !== 'string' ||
        typeof r.ttl !== 'number'
      ) {
        throw new Error(`malformed record in ovhsim state file: ${JSON.stringify(r)}`);
      }
      return { id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl };
    };
    this.zones.clear();
    let maxId = data.nextId - 1;
    for (const [name, z] of Object.entries(data.zones)) {
      const draft = new Map<number, StoredRecord>();
      for (const r of z.draft.map(check)) {
        draft.set(r.id, r);
        maxId = Math.max(maxId, r.id);
      }
      const published = z.published.map(check);
      for (const r of published) maxId = Math.max(maxId, r.id);
      this.zones.set(name, { name, draft, published, serial: z.serial, lastUpdate: z.lastUpdate });
    }
    this.nextId = maxId + 1;
  }
}

/** Reads a state file; undefined when it does not exist. */
export function readStateFile(file: string): PersistedState | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text) as PersistedState;
}

/** Writes a state file atomically: a temporary file in the same directory, then a rename. */
export function writeStateFile(file: string, data: PersistedState): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  fs.writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}
