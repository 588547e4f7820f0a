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

function fieldByJsonKey(m: DescMessage, key: string): DescField | undefined {
  return m.fields.find((f) => f.jsonName === key || f.name === key);
}

/** Walks a JSON value as message `m`; throws at the first key or enum name the schema does not know. */
export function checkJson(m: DescMessage, v: unknown, path: string): void {
  if (v === null || isWellKnown(m)) return;
  if (typeof v !== 'object' || Array.isArray(v)) return; // protobuf-es reports the wrong shape itself
  for (const [key, value] of Object.entries(v as Record<string, unknown>)) {
    const f = fieldByJsonKey(m, key);
    const at = join(path, key);
    if (!f) {
      throw invalid(at, `unknown field of ${m.name} (known: ${m.fields.map((x) => x.jsonName).join(', ') || 'none'})`);
    }
    checkFieldJson(f, value, at);
  }
}

function checkFieldJson(f: DescField, v: unknown, at: string): void {
  if (v === null) return;
  switch (f.fieldKind) {
    case 'scalar':
      return checkString(v, at);
    case 'enum':
      return checkEnumJson(f.enum, v, at);
    case 'message':
      return checkJson(f.message, v, at);
    case 'list':
      if (!Array.isArray(v)) return;
      v.forEach((item, i) => {
        if (f.listKind === 'enum') checkEnumJson(f.enum, item, `${at}[${i}]`);
        else if (f.listKind === 'message') checkJson(f.message, item, `${at}[${i}]`);
        else checkString(item, `${at}[${i}]`);
      });
      return;
    case 'map':
      if (typeof v !== 'object' || Array.isArray(v)) return;
      for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
        const why = unstorable(k);
        if (why) throw invalid(`${at} key ${JSON.stringify(k)}`, why);
        if (f.mapKind === 'enum') checkEnumJson(f.enum, item, `${at}[${JSON.stringify(k)}]`);
        else if (f.mapKind === 'message') checkJson(f.message, item, `${at}[${JSON.stringify(k)}]`);
        else checkString(item, `${at}[${JSON.stringify(k)}]`);
      }
      return;
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

function checkEnumValue(e: DescEnum, v: unknown, at: string): void {
  if (typeof v === 'number' && !e.values.some((x) => x.number === v)) {
    throw invalid(at, `unknown value ${v} (known: ${e.values.map((x) => `${x.number} ${x.name}`).join(', ')})`);
  }
}

function checkString(v: unknown, at: string): void {
  if (typeof v !== 'string') return;
  const why = unstorable(v);
  if (why) throw invalid(at, why);
}

/** Walks a decoded message: unknown fields, unknown enum numbers, unstorable strings. */
export function checkMessage(m: DescMessage, msg: Msg, path: string): void {
  if (isWellKnown(m)) return;
  const unknown = msg.$unknown;
  if (unknown && unknown.length > 0) {
    throw invalid(path || m.name, `unknown field number ${unknown.map((u) => u.no).join(', ')} of ${m.name} (a newer client? this server does not know it and will not ignore it)`);
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
    const at = join(path, f.jsonName);
    checkField(f, value, at);
  }
}

function checkField(f: DescField, v: unknown, at: string): void {
  if (v === undefined || v === null) return;
  switch (f.fieldKind) {
    case 'scalar':
      return checkString(v, at);
    case 'enum':
      return checkEnumValue(f.enum, v, at);
    case 'message':
      return checkMessage(f.message, v as Msg, at);
    case 'list':
      (v as unknown[]).forEach((item, i) => {
        if (f.listKind === 'enum') checkEnumValue(f.enum, item, `${at}[${i}]`);
        else if (f.listKind === 'message') checkMessage(f.message, item as Msg, `${at}[${i}]`);
        else checkString(item, `${at}[${i}]`);
      });
      return;
    case 'map':
      for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
        const why = unstorable(k);
        if (why) throw invalid(`${at} key ${JSON.stringify(k)}`, why);
        if (f.mapKind === 'enum') checkEnumValue(f.enum, item, `${at}[${JSON.stringify(k)}]`);
        else if (f.mapKind === 'message') checkMessage(f.message, item as Msg, `${at}[${JSON.stringify(k)}]`);
        else checkString(item, `${at}[${JSON.stringify(k)}]`);
      }
      return;
  }
}

/** Checks every unary request message (JSON and binary alike) before the handler sees it. */
export function strictInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) checkMessage(req.method.input, req.message as unknown as Msg, '');
    return next(req);
  };
}
