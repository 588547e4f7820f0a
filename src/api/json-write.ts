/**
 * Large answers written as protobuf-es's JSON would write them, in slices (core/slices.ts): the small
 * heads of a message through protobuf-es (toJson), its long lists item by item, here, in proto3 JSON
 * as protobuf-es writes it — fields in field-number order under their JSON names, default values
 * (empty strings and lists, 0, empty maps, absent messages) left out. Used by the Plan answer
 * (api/plan-json.ts) and the Records answer (api/records-json.ts); their tests compare the bytes with
 * toJsonString's.
 */
import type { DescMessage } from '@bufbuild/protobuf';
import { toJson } from '@bufbuild/protobuf';
import { TimestampSchema, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Slicer } from '../core/slices.js';
import { toUnicode } from '../dns/names.js';
import type { Endpoint } from '../dns/types.js';
import { UNICODE_NAME_LABEL } from './convert.js';

type Json = Record<string, unknown>;

const str = JSON.stringify;

export type JsonEndpoint = {
  dnsName?: string;
  recordType?: string;
  targets?: string[];
  ttl?: number;
  setIdentifier?: string;
  labels?: Record<string, string>;
  targetStates?: JsonTargetState[];
};
type JsonTargetState = { target?: string; status: string; reason?: string; since?: string; detail?: string };

/** An endpoint as endpointToPb shows it (api/convert.ts), as its JSON object (keys in field order). */
export function endpointObject(e: Endpoint): JsonEndpoint {
  const unicode = toUnicode(e.dnsName);
  const labels = unicode !== e.dnsName ? { ...e.labels, [UNICODE_NAME_LABEL]: unicode } : (e.labels ?? {});
  const o: JsonEndpoint = {};
  if (e.dnsName !== '') o.dnsName = e.dnsName;
  o.recordType = e.recordType;
  if (e.targets.length > 0) o.targets = e.targets;
  if (e.ttl !== 0) o.ttl = e.ttl;
  if (e.setIdentifier) o.setIdentifier = e.setIdentifier;
  for (const _ in labels) {
    o.labels = labels;
    break;
  }
  if (e.targetStates?.length) {
    o.targetStates = e.targetStates.map((t) => ({
      ...(t.target ? { target: t.target } : {}),
      status: `TARGET_STATUS_${t.status.toUpperCase()}`,
      ...(t.reason ? { reason: t.reason } : {}),
      ...(t.since ? { since: toJson(TimestampSchema, timestampFromDate(t.since)) as string } : {}),
      ...(t.detail ? { detail: t.detail } : {}),
    }));
  }
  return o;
}

/** The items' JSON, written by JSON.stringify a chunk at a time (a slice each), comma-joined. */
export async function writeChunks<T>(items: readonly T[], toObject: (item: T) => unknown, slicer: Slicer, chunk: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < items.length; i += chunk) {
    await slicer.check();
    const part = str(items.slice(i, i + chunk).map(toObject));
    out.push(part.slice(1, -1));
  }
  return out;
}

/** `head` (a message's JSON object) with `lists` (field JSON name -> items, written) put in field order. */
export function withLists(schema: DescMessage, head: Json, lists: Record<string, string[]>): string {
  return withListsParts(schema, head, lists).join('');
}

/**
 * withLists's text as the pieces it is joined from (every item its own piece), to be made bytes a
 * piece at a time (textBytes) rather than joined into one string of megabytes first.
 */
export function withListsParts(schema: DescMessage, head: Json, lists: Record<string, string[]>): string[] {
  const parts: string[] = ['{'];
  for (const f of schema.fields) {
    const items = lists[f.jsonName];
    const field = items !== undefined ? items.length > 0 : f.jsonName in head;
    if (!field) continue;
    if (parts.length > 1) parts.push(',');
    if (items === undefined) {
      parts.push(`${str(f.jsonName)}:${str(head[f.jsonName])}`);
      continue;
    }
    parts.push(`${str(f.jsonName)}:[`);
    for (let i = 0; i < items.length; i++) {
      if (i > 0) parts.push(',');
      parts.push(items[i]!);
    }
    parts.push(']');
  }
  parts.push('}');
  return parts;
}

/**
 * The UTF-8 bytes of the pieces joined, written into one buffer a piece at a time, the slice checked
 * between pieces: no string of megabytes, no copy of the whole.
 */
export async function textBytes(parts: readonly string[], slicer: Slicer): Promise<Buffer> {
  let total = 0;
  for (let i = 0; i < parts.length; i++) {
    if (i % 64 === 0) await slicer.check();
    total += Buffer.byteLength(parts[i]!);
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    if (i % 16 === 0) await slicer.check();
    at += out.write(parts[i]!, at);
  }
  return out;
}
