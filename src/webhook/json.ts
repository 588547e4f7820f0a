/**
 * JSON the way external-dns (Go's encoding/json) reads and writes it. Pure.
 *
 * Reading (parseJson): a strict RFC 8259 parser that keeps every key of an object in order,
 * duplicates included, and every number as its source text. Go decodes an object key into the struct
 * field whose tag matches it exactly or, failing that, case-insensitively (`DNSName`, `dnsname` and
 * `dnsName` all fill dnsName), and when a field appears twice the last occurrence wins; JSON.parse
 * cannot tell that story, so objects here are lists of entries and `field()` applies Go's rule.
 * Numbers stay text so that `300.0` or `3e2`, which Go refuses for an integer field, can be told from
 * `300`.
 *
 * Writing (goJson): JSON.stringify plus Go's escaping of `<`, `>`, `&`, U+2028 and U+2029, so that
 * the bytes match what a Go webhook provider would send.
 */

export type JsonValue = null | boolean | JsonNumber | string | JsonValue[] | JsonObject;

export interface JsonNumber {
  readonly kind: 'number';
  /** The number as written, e.g. `300`, `-1`, `3e2`. */
  readonly text: string;
}

export interface JsonObject {
  readonly kind: 'object';
  /** Every key in order, duplicates kept. */
  readonly entries: ReadonlyArray<readonly [string, JsonValue]>;
}

export class JsonSyntaxError extends Error {
  override readonly name = 'JsonSyntaxError';
  constructor(
    readonly offset: number,
    rule: string,
  ) {
    super(`invalid JSON at offset ${offset}: ${rule}`);
  }
}

/** Nesting deeper than this is refused (an endpoint list needs 4 levels). */
export const MAX_JSON_DEPTH = 32;

export function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && v.kind === 'object';
}

export function isNumber(v: JsonValue | undefined): v is JsonNumber {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && v.kind === 'number';
}

/**
 * Go's case folding for key matching (bytes.EqualFold / strings.EqualFold on the simple folds that
 * matter for ASCII keys): ASCII case, plus the Kelvin sign for `k` and the long s for `s`.
 */
function foldKey(key: string): string {
  return key.replace(/\u212a/g, 'k').replace(/\u017f/g, 's').toLowerCase();
}

/**
 * The value Go would decode into the field tagged `name`: the last entry whose key equals `name`
 * exactly or case-insensitively. Undefined when absent.
 */
export function field(obj: JsonObject, name: string): JsonValue | undefined {
  const folded = foldKey(name);
  let found: JsonValue | undefined;
  for (const [k, v] of obj.entries) {
    if (k === name || foldKey(k) === folded) found = v;
  }
  return found;
}

/** What a JSON value is, for error messages. */
export function describe(v: JsonValue | undefined): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'boolean') return 'a boolean';
  if (Array.isArray(v)) return 'a list';
  return v.kind === 'number' ? `the number ${v.text}` : 'an object';
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Parses one JSON document (surrounding whitespace allowed, nothing else after it). */
export function parseJson(text: string): JsonValue {
  let i = 0;
  const n = text.length;

  const skip = (): void => {
    while (i < n && WS.has(text.charCodeAt(i))) i++;
  };
  const fail = (rule: string): never => {
    throw new JsonSyntaxError(i, rule);
  };

  const parseString = (): string => {
    // text[i] is the opening quote
    i++;
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) fail('control character in a string');
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          i -= 1;
          fail('bad escape');
      }
      start = i;
    }
  };

  const parseValue = (depth: number): JsonValue => {
    if (depth > MAX_JSON_DEPTH) fail(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    skip();
    if (i >= n) fail('unexpected end of input');
    const c = text[i];
    if (c === '"') return parseString();
    if (c === '{') {
      i++;
      const entries: Array<readonly [string, JsonValue]> = [];
      skip();
      if (text[i] === '}') {
        i++;
        return { kind: 'object', entries };
      }
      for (;;) {
        skip();
        if (text[i] !== '"') fail('expected a string key');
        const key = parseString();
        skip();
        if (text[i] !== ':') fail('expected ":"');
        i++;
        entries.push([key, parseValue(depth + 1)]);
        skip();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return { kind: 'object', entries };
        }
        fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const items: JsonValue[] = [];
      skip();
      if (text[i] === ']') {
        i++;
        return items;
      }
      for (;;) {
        items.push(parseValue(depth + 1));
        skip();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return items;
        }
        fail('expected "," or "]"');
      }
    }
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m && m[0] !== '') {
      i += m[0].length;
      return { kind: 'number', text: m[0] };
    }
    return fail('unexpected character');
  };

  const value = parseValue(0);
  skip();
  if (i < n) fail('unexpected data after the JSON value');
  return value;
}

/** JSON.stringify with Go's HTML-safe escaping (json.Marshal's default). */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
