/**
 * Domain names on the wire (RFC 1035 §3.1, §4.1.4): reading them with loop-safe decompression,
 * writing them with or without compression, and their canonical form (RFC 4034 §6.2, what TSIG signs).
 *
 * In memory a name is its presentation text without the final dot ('' is the root): each label's
 * printable bytes as they are, except `.` and `\`, which are escaped `\.` and `\\`, and any other byte
 * as `\DDD` (decimal). So any name read can be written back byte for byte, and a label holding a dot
 * or a space is never mistaken for two labels; names that are not host names are then refused by
 * dns/names.ts (normalizeName), which knows nothing of escapes.
 *
 * Decompression follows pointers only backwards (each pointer must point before the place it was
 * read from), so no chain of pointers can loop; with at most 128 labels and 255 octets a name is read
 * in bounded time whatever the message says.
 */
import { WireFormatError } from './errors.js';

/** RFC 1035: a name is at most 255 octets on the wire, a label at most 63. */
export const MAX_WIRE_NAME = 255;
export const MAX_WIRE_LABEL = 63;

/** Presentation text of one label's bytes. */
function labelText(bytes: Uint8Array, start: number, end: number): string {
  let out = '';
  for (let i = start; i < end; i++) {
    const b = bytes[i]!;
    if (b === 0x2e || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b > 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\${String(b).padStart(3, '0')}`;
  }
  return out;
}

/**
 * The labels of a name in presentation text, as bytes. Throws WireFormatError when the text cannot be
 * a name (an empty label, a label over 63 octets, the whole over 255, a bad escape).
 */
export function nameLabels(name: string): Buffer[] {
  const text = name;
  if (text === '' || text === '.') return [];
  const labels: Buffer[] = [];
  let current: number[] = [];
  let ended = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x2e) {
      labels.push(finishLabel(current, name));
      current = [];
      // A final unescaped dot is the root: the name ends here.
      if (i === text.length - 1) ended = true;
      continue;
    }
    if (ch === 0x5c) {
      const d = /^\d{3}/.exec(text.slice(i + 1, i + 4));
      if (d) {
        const v = Number(d[0]);
        if (v > 255) throw new WireFormatError(`name ${JSON.stringify(name)}: escape \\${d[0]} is not a byte`);
        current.push(v);
        i += 3;
      } else if (i + 1 < text.length) {
        current.push(text.charCodeAt(++i) & 0xff);
      } else {
        throw new WireFormatError(`name ${JSON.stringify(name)} ends with a lone backslash`);
      }
      continue;
    }
    if (ch > 0x7f) {
      // Not ASCII: its UTF-8 bytes (a name read from the wire never holds these; this is for callers).
      current.push(...Buffer.from(text[i]!, 'utf8'));
      continue;
    }
    current.push(ch);
  }
  if (!ended) labels.push(finishLabel(current, name));
  if (labels.reduce((n, l) => n + 1 + l.length, 1) > MAX_WIRE_NAME)
    throw new WireFormatError(`name ${JSON.stringify(name.slice(0, 80))}… is longer than ${MAX_WIRE_NAME} octets`);
  return labels;
}

function finishLabel(bytes: number[], name: string): Buffer {
  if (bytes.length === 0) throw new WireFormatError(`name ${JSON.stringify(name)} has an empty label`);
  if (bytes.length > MAX_WIRE_LABEL) throw new WireFormatError(`name ${JSON.stringify(name.slice(0, 80))} has a label longer than ${MAX_WIRE_LABEL} octets`);
  return Buffer.from(bytes);
}

/** Lowercases ASCII letters only (DNS case folding, RFC 4343). */
export function foldCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** A name's uncompressed wire form; lowercased (ASCII letters only) when `canonical` (RFC 4034 §6.2). */
export function nameWire(name: string, canonical = false): Buffer {
  const labels = nameLabels(canonical ? foldCase(name) : name);
  const out = Buffer.alloc(labels.reduce((n, l) => n + 1 + l.length, 1));
  let o = 0;
  for (const l of labels) {
    out[o++] = l.length;
    l.copy(out, o);
    o += l.length;
  }
  out[o] = 0;
  return out;
}

/**
 * Reads the name at `offset` of `message`. Returns it and the offset right after it where it was read
 * (after the first pointer when it is compressed).
 */
export function readName(message: Uint8Array, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let pos = offset;
  let next = -1;
  let octets = 1;
  // Pointers may only point before the place they were read from: a chain of them strictly
  // decreases, so it ends. The label count bounds the work regardless.
  let limit = offset;
  for (let steps = 0; ; steps++) {
    if (steps > MAX_WIRE_NAME) throw new WireFormatError('name: too many labels or pointers');
    if (pos >= message.length) throw new WireFormatError(`name at offset ${offset}: runs past the end of the message`);
    const len = message[pos]!;
    if (len === 0) {
      if (next < 0) next = pos + 1;
      break;
    }
    const kind = len & 0xc0;
    if (kind === 0xc0) {
      if (pos + 1 >= message.length) throw new WireFormatError(`name at offset ${offset}: a pointer runs past the end of the message`);
      const target = ((len & 0x3f) << 8) | message[pos + 1]!;
      if (next < 0) next = pos + 2;
      if (target >= limit) throw new WireFormatError(`name at offset ${offset}: a compression pointer to ${target} does not point backwards`);
      limit = target;
      pos = target;
      continue;
    }
    if (kind !== 0) throw new WireFormatError(`name at offset ${offset}: label type 0x${kind.toString(16)} is not supported`);
    if (pos + 1 + len > message.length) throw new WireFormatError(`name at offset ${offset}: a label runs past the end of the message`);
    octets += 1 + len;
    if (octets > MAX_WIRE_NAME) throw new WireFormatError(`name at offset ${offset}: longer than ${MAX_WIRE_NAME} octets`);
    labels.push(labelText(message, pos + 1, pos + 1 + len));
    pos += 1 + len;
  }
  return { name: labels.join('.'), next };
}

/** The key of the name made of labels[from..] in a compression table: case-folded, escaped. */
export function suffixKey(labels: readonly Buffer[], from: number): string {
  return labels
    .slice(from)
    .map((l) => foldCase(l.toString('latin1')).replace(/[.\\]/g, '\\$&'))
    .join('.');
}

/** Whether two names are the same name (case-insensitive for ASCII letters). */
export function sameName(a: string, b: string): boolean {
  return foldCase(a) === foldCase(b);
}
