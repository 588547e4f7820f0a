/**
 * Strict input on every RPC. Connect's JSON reader ignores unknown keys and unknown enum names by
 * default (`ignoreUnknownFields`), so `"tll":60` or `"policy":"upsert-only"` were read as "no TTL" and
 * "policy unspecified" (= SYNC, which deletes). Here:
 *
 * - JSON bodies are checked against the method's input schema before protobuf-es reads them
 *   (strictJsonOptions, handed to the router per method): an unknown key or an unknown enum name is
 *   InvalidArgument naming the field path, the rule, and what is known. protobuf-es then reads the
 *   body with ignoreUnknownFields off, as a second line.
 * - Every decoded request, JSON or binary, is walked (strictInterceptor): unknown fields of a binary
 *   message, enum numbers the schema does not know, and strings Postgres cannot store (U+0000, lone
 *   UTF-16 surrogates) are InvalidArgument naming the field.
 *
 * Binary unknown fields are refused too, on purpose: in proto3 a field at its default value is not
 * written, so a newer client sends a field this server does not know only when it asks for something
 * non-default (a new option, a new filter). Ignoring it would do something else than asked — an
 * apply where a dry run was meant, a list without its filter — while refusing costs a client that
 * does not use the new field nothing.
 */
import type { DescEnum, DescField, DescMessage } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { UniversalHandlerOptions } from '@connectrpc/connect/protocol';
import { unstorable } from '../dns/endpoint.js';

/** Fields from google.protobuf.* have their own JSON forms (timestamps as strings…): not walked. */
function isWellKnown(m: DescMessage): boolean {
  return m.typeName.startsWith('google.protobuf.');
}

function invalid(field: string, rule: string): ConnectError {
  return new ConnectError(`${field}: ${rule}`, Code.InvalidArgument);
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

function enumNames(e: DescEnum): string {
  const names = e.values.filter((v) => v.number !== 0).map((v) => v.name);
  return names.length ? names.join(', ') : '(none)';
}

function checkEnumJson(e: DescEnum, v: unknown, field: string): void {
  if (v === null) return;
  if (typeof v === 'string') {
    if (!e.values.some((x) => x.name === v)) throw invalid(field, `unknown value ${JSON.stringify(v)} (known: ${enumNames(e)})`);
    return;
  }
  if (typeof v === 'number') {
    if (!e.values.some((x) => x.number === v)) throw invalid(field, `unknown value ${v} (known: ${e.values.map((x) => `${x.number} ${x.name}`).join(', ')})`);
    return;
  }
  throw invalid(field, `must be one of ${enumNames(e)}`);
}

/** Per message: its fields by JSON key (jsonName and proto name, as protobuf-es accepts both). */
const fieldsByKey = new WeakMap<DescMessage, Map<string, DescField>>();

function fieldByJsonKey(m: DescMessage, key: string): DescField | undefined {
  let byKey = fieldsByKey.get(m);
  if (!byKey) {
    byKey = new Map();
    for (const f of m.fields) {
      byKey.set(f.name, f);
      byKey.set(f.jsonName, f);
    }
    fieldsByKey.set(m, byKey);
  }
  return byKey.get(key);
}

/**
 * Walks a JSON value as message `m`; throws at the first key or enum name the schema does not know.
 * Field paths are built only for an error or a nested message (a 5,000-endpoint request is walked in
 * a few milliseconds).
 */
export function checkJson(m: DescMessage, v: unknown, path: string): void {
  if (v === null || isWellKnown(m)) return;
  if (typeof v !== 'object' || Array.isArray(v)) return; // protobuf-es reports the wrong shape itself
  const o = v as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const f = fieldByJsonKey(m, key);
    if (!f) {
      throw invalid(join(path, key), `unknown field of ${m.name} (known: ${m.fields.map((x) => x.jsonName).join(', ') || 'none'})`);
    }
    checkFieldJson(f, o[key], path, key);
  }
}

function checkFieldJson(f: DescField, v: unknown, path: string, key: string): void {
  if (v === null) return;
  switch (f.fieldKind) {
    case 'scalar':
      checkString(v, path, key);
      return;
    case 'enum':
      checkEnumJson(f.enum, v, join(path, key));
      return;
    case 'message':
      checkJson(f.message, v, join(path, key));
      return;
    case 'list': {
      if (!Array.isArray(v)) return;
      const at = join(path, key);
      for (let i = 0; i < v.length; i++) {
        const item: unknown = v[i];
        if (f.listKind === 'enum') checkEnumJson(f.enum, item, `${at}[${i}]`);
        else if (f.listKind === 'message') checkJson(f.message, item, `${at}[${i}]`);
        else checkString(item, at, i);
      }
      return;
    }
    case 'map': {
      if (typeof v !== 'object' || Array.isArray(v)) return;
      const at = join(path, key);
      const o = v as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        const item = o[k];
        const why = unstorable(k);
        if (why) throw invalid(`${at} key ${JSON.stringify(k)}`, why);
        if (f.mapKind === 'enum') checkEnumJson(f.enum, item, `${at}[${JSON.stringify(k)}]`);
        else if (f.mapKind === 'message') checkJson(f.message, item, `${at}[${JSON.stringify(k)}]`);
        else checkString(item, `${at}[${JSON.stringify(k)}]`, '');
      }
      return;
    }
  }
}

/**
 * Router options for one method: JSON checked against its input schema first, then read by
 * protobuf-es with unknown fields refused. Connect hands the body to `textDecoder.decode`; what that
 * throws becomes the InvalidArgument answer.
 */
export function strictJsonOptions(input: DescMessage): Partial<UniversalHandlerOptions> {
  const utf8 = new TextDecoder();
  const textDecoder = {
    decode(data?: Uint8Array): string {
      const text = utf8.decode(data);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return text; // not JSON: protobuf-es says so
      }
      checkJson(input, parsed, '');
      return text;
    },
  };
  // Connect's JSON serialization reads `textDecoder` from jsonOptions (JsonSerializationOptions).
  const jsonOptions = { ignoreUnknownFields: false, textDecoder } as UniversalHandlerOptions['jsonOptions'];
  return { jsonOptions };
}

type Msg = Record<string, unknown> & { $unknown?: Array<{ no: number }> };

function checkEnumValue(e: DescEnum, v: unknown, path: string, key: string | number): void {
  if (typeof v === 'number' && !e.values.some((x) => x.number === v)) {
    const at = typeof key === 'number' ? `${path}[${key}]` : key === '' ? path : join(path, key);
    throw invalid(at, `unknown value ${v} (known: ${e.values.map((x) => `${x.number} ${x.name}`).join(', ')})`);
  }
}

/** The string at `path.key` (`path[key]` for a list index; `path` itself when key is ''), its path built only when it is refused. */
function checkString(v: unknown, path: string, key: string | number): void {
  if (typeof v !== 'string') return;
  const why = unstorable(v); // one regex test for the common clean string (dns/endpoint.ts)
  if (why) throw invalid(typeof key === 'number' ? `${path}[${key}]` : key === '' ? path : join(path, key), why);
}

/** Walks a decoded message: unknown fields, unknown enum numbers, unstorable strings. */
export function checkMessage(m: DescMessage, msg: Msg, path: string): void {
  if (isWellKnown(m)) return;
  const unknown = msg.$unknown;
  if (unknown && unknown.length > 0) {
    throw invalid(
      path || m.name,
      `unknown field number ${unknown.map((u) => u.no).join(', ')} of ${m.name} (a newer client? this server does not know it and will not ignore it)`,
    );
  }
  for (const f of m.fields) {
    let value: unknown;
    if (f.oneof) {
      const o = msg[f.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (o?.case !== f.localName) continue;
      value = o.value;
    } else {
      value = msg[f.localName];
    }
    if (value === undefined || value === null) continue;
    checkField(f, value, path, f.jsonName);
  }
}

function checkField(f: DescField, v: unknown, path: string, key: string): void {
  switch (f.fieldKind) {
    case 'scalar':
      checkString(v, path, key);
      return;
    case 'enum':
      checkEnumValue(f.enum, v, path, key);
      return;
    case 'message':
      checkMessage(f.message, v as Msg, join(path, key));
      return;
    case 'list': {
      const list = v as unknown[];
      if (list.length === 0) return;
      const at = join(path, key);
      for (let i = 0; i < list.length; i++) {
        const item = list[i];
        if (f.listKind === 'enum') checkEnumValue(f.enum, item, at, i);
        else if (f.listKind === 'message') checkMessage(f.message, item as Msg, `${at}[${i}]`);
        else checkString(item, at, i);
      }
      return;
    }
    case 'map': {
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o);
      if (keys.length === 0) return;
      const at = join(path, key);
      for (const k of keys) {
        const item = o[k];
        const why = unstorable(k);
        if (why) throw invalid(`${at} key ${JSON.stringify(k)}`, why);
        if (f.mapKind === 'enum') checkEnumValue(f.enum, item, `${at}[${JSON.stringify(k)}]`, '');
        else if (f.mapKind === 'message') checkMessage(f.message, item as Msg, `${at}[${JSON.stringify(k)}]`);
        else checkString(item, `${at}[${JSON.stringify(k)}]`, '');
      }
      return;
    }
  }
}

/** Checks every unary request message (JSON and binary alike) before the handler sees it. */
export function strictInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) checkMessage(req.method.input, req.message as unknown as Msg, '');
    return next(req);
  };
}
