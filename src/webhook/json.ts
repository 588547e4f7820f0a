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
import type { Steps } from '../dns/steps.js';

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
  return key
    .replace(/\u212a/g, 'k')
    .replace(/\u017f/g, 's')
    .toLowerCase();
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

/** Items read between two pause points of parseJsonSteps. */
const ITEMS_PER_STEP = 64;

/** A recursive-descent reader over one text; `i` is the offset of the next character. */
class Reader {
  private i = 0;
  private readonly n: number;

  constructor(private readonly text: string) {
    this.n = text.length;
  }

  private fail(rule: string): never {
    throw new JsonSyntaxError(this.i, rule);
  }

  private failAt(offset: number, rule: string): never {
    this.i = offset;
    return this.fail(rule);
  }

  skip(): void {
    while (this.i < this.n && WS.has(this.text.charCodeAt(this.i))) this.i++;
  }

  /** Fails unless only whitespace is left. */
  end(): void {
    this.skip();
    if (this.i < this.n) this.fail('unexpected data after the JSON value');
  }

  /** The first character of the next value (after whitespace), with the depth and end-of-input checks. */
  private first(depth: number): string {
    if (depth > MAX_JSON_DEPTH) this.fail(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    this.skip();
    if (this.i >= this.n) this.fail('unexpected end of input');
    return this.text[this.i]!;
  }

  /** After `[` or `{`: true when the container is empty (its closer read). */
  private empty(close: string): boolean {
    this.i++;
    this.skip();
    if (this.text[this.i] !== close) return false;
    this.i++;
    return true;
  }

  /** After an item: true when another follows (its comma read), false at the closer (read). */
  private more(close: string): boolean {
    this.skip();
    const c = this.text[this.i];
    if (c === ',') {
      this.i++;
      return true;
    }
    if (c !== close) this.fail(`expected "," or "${close}"`);
    this.i++;
    return false;
  }

  /** An object's key and its colon. */
  private key(): string {
    this.skip();
    if (this.text[this.i] !== '"') this.fail('expected a string key');
    const key = this.string();
    this.skip();
    if (this.text[this.i] !== ':') this.fail('expected ":"');
    this.i++;
    return key;
  }

  /** One value, read at once. */
  value(depth: number): JsonValue {
    const c = this.first(depth);
    if (c === '[') {
      const items: JsonValue[] = [];
      if (!this.empty(']'))
        do items.push(this.value(depth + 1));
        while (this.more(']'));
      return items;
    }
    if (c === '{') {
      const entries: Array<readonly [string, JsonValue]> = [];
      if (!this.empty('}'))
        do entries.push([this.key(), this.value(depth + 1)]);
        while (this.more('}'));
      return { kind: 'object', entries };
    }
    return this.scalar(c);
  }

  /**
   * One value, its containers in the top `levels` levels read item by item with a pause point every
   * ITEMS_PER_STEP items (deeper values are read at once: an endpoint is small).
   */
  *steps(depth: number, levels: number): Steps<JsonValue> {
    const c = this.first(depth);
    if (c === '[') {
      const items: JsonValue[] = [];
      if (!this.empty(']')) {
        do {
          items.push(levels > 1 ? yield* this.steps(depth + 1, levels - 1) : this.value(depth + 1));
          if (items.length % ITEMS_PER_STEP === 0) yield;
        } while (this.more(']'));
      }
      return items;
    }
    if (c === '{') {
      const entries: Array<readonly [string, JsonValue]> = [];
      if (!this.empty('}')) {
        do {
          const key = this.key();
          entries.push([key, levels > 1 ? yield* this.steps(depth + 1, levels - 1) : this.value(depth + 1)]);
          if (entries.length % ITEMS_PER_STEP === 0) yield;
        } while (this.more('}'));
      }
      return { kind: 'object', entries };
    }
    return this.scalar(c);
  }

  private scalar(c: string): JsonValue {
    const { text } = this;
    if (c === '"') return this.string();
    if (text.startsWith('true', this.i)) {
      this.i += 4;
      return true;
    }
    if (text.startsWith('false', this.i)) {
      this.i += 5;
      return false;
    }
    if (text.startsWith('null', this.i)) {
      this.i += 4;
      return null;
    }
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(text);
    if (m && m[0] !== '') {
      this.i += m[0].length;
      return { kind: 'number', text: m[0] };
    }
    return this.fail('unexpected character');
  }

  private string(): string {
    const { text, n } = this;
    // text[i] is the opening quote
    let i = this.i + 1;
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) this.failAt(i, 'unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        this.i = i + 1;
        return out;
      }
      if (c < 0x20) this.failAt(i, 'control character in a string');
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
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.failAt(i, 'bad \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          i -= 1;
          this.failAt(i, 'bad escape');
      }
      start = i;
    }
  }
}

/** Parses one JSON document (surrounding whitespace allowed, nothing else after it). */
export function parseJson(text: string): JsonValue {
  const r = new Reader(text);
  const value = r.value(0);
  r.end();
  return value;
}

/**
 * parseJson with pause points (core/slices.ts): the top two levels (a list of endpoints, or the
 * change set's object and its lists) item by item, so that a 16 MB body is read in slices.
 */
export function* parseJsonSteps(text: string): Steps<JsonValue> {
  const r = new Reader(text);
  const value = yield* r.steps(0, 2);
  r.end();
  return value;
}

/** JSON.stringify with Go's HTML-safe escaping (json.Marshal's default). */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
