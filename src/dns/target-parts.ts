/**
 * The pieces record targets are made of, shared by every type's canonical form (targets.ts,
 * targets-services.ts, loc.ts, mail-policy.ts): host names, bounded integers, whitespace-separated
 * fields, DNS character strings in presentation form, hex strings. Pure; each refusal names the field
 * and the rule (InvalidInputError).
 */
import { InvalidInputError } from './errors.js';
import { normalizeName } from './names.js';

export interface TargetContext {
  /** The zone of the record. When given, a host target `@` stands for the zone apex (BIND notation). */
  zone?: string;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's purpose.
export const CONTROL = /[\u0000-\u001f\u007f]/;

/** A host target: `.` (the root) only where `allowRoot`; `@` the zone apex when the zone is known. */
export function canonicalHost(host: string, field: string, ctx: TargetContext, allowRoot: boolean, type: string): string {
  if (host === '.') {
    if (allowRoot) return '.';
    throw new InvalidInputError(field, `a ${type} target must be a host name, not the root "."`);
  }
  if (host === '@' && ctx.zone !== undefined) return ctx.zone;
  return normalizeName(host, field, { allowUnderscore: true });
}

export function parseUint(token: string, max: number, what: string, field: string): number {
  if (!/^[0-9]{1,10}$/.test(token) || Number(token) > max) {
    throw new InvalidInputError(field, `${what} must be an integer from 0 to ${max} (got ${JSON.stringify(token)})`);
  }
  return Number(token);
}

export function tokens(value: string): string[] {
  const trimmed = value.trim();
  return trimmed === '' ? [] : trimmed.split(/\s+/);
}

/**
 * Reads a target into fields: bare words split by whitespace, and DNS character strings in double
 * quotes (`"…"`, `\"` and `\\` escaped; another backslash escapes the character after it) as one field
 * each. `quoted[i]` says whether field i was quoted. Undefined when a quote is not closed or a quoted
 * string runs into the next field.
 */
export function fieldsOf(value: string): { fields: string[]; quoted: boolean[] } | undefined {
  const fields: string[] = [];
  const quoted: boolean[] = [];
  let i = 0;
  const n = value.length;
  const space = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
  while (i < n) {
    while (space(value[i])) i++;
    if (i >= n) break;
    if (value[i] === '"') {
      let text = '';
      i++;
      for (;;) {
        if (i >= n) return undefined;
        const c = value[i] as string;
        if (c === '\\' && i + 1 < n) {
          text += value[i + 1];
          i += 2;
        } else if (c === '"') {
          i++;
          break;
        } else {
          text += c;
          i++;
        }
      }
      if (i < n && !space(value[i])) return undefined;
      fields.push(text);
      quoted.push(true);
    } else {
      const start = i;
      while (i < n && !space(value[i])) i++;
      fields.push(value.slice(start, i));
      quoted.push(false);
    }
  }
  return { fields, quoted };
}

/** A character string in presentation form: quoted, `"` and `\` escaped. */
export function quoteString(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Hex digits (whitespace inside ignored, as RFC 6698 and 4255 allow), lowercase; `what` names them in the refusal. */
export function canonicalHex(parts: readonly string[], what: string, field: string): string {
  const hex = parts.join('').toLowerCase();
  if (hex === '' || !/^[0-9a-f]+$/.test(hex)) throw new InvalidInputError(field, `${what} must be hexadecimal digits (got ${JSON.stringify(parts.join(' '))})`);
  if (hex.length % 2 !== 0) throw new InvalidInputError(field, `${what} must be a whole number of bytes (an even count of hex digits, got ${hex.length})`);
  return hex;
}
