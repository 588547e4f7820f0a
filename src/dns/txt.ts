/**
 * TXT presentation form: one or more double-quoted strings, e.g. `"v=spf1 -all"` or, for values
 * over 255 characters, `"…" "…"`. Inside the quotes `\"` stands for `"` and `\\` for `\`; any
 * other backslash is literal. OVH answers TXT targets quoted; dnsplane stores and compares the
 * decoded text (the strings joined). See decodeTxt for the exact rule.
 */

/** Whether a character is whitespace between quoted strings. */
function isSpace(ch: string | undefined): boolean {
  return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r';
}

/**
 * Decodes a value that is entirely in presentation form (optional surrounding whitespace, one or
 * more quoted strings separated by whitespace) into its text, the strings joined.
 * Returns undefined when the value is not in that form (then it is plain text).
 */
export function parseTxtPresentation(value: string): string | undefined {
  const n = value.length;
  let i = 0;
  while (isSpace(value[i])) i++;
  if (value[i] !== '"') return undefined;
  let text = '';
  while (i < n) {
    if (value[i] !== '"') return undefined;
    i++;
    for (;;) {
      if (i >= n) return undefined; // unterminated string
      const ch = value[i] as string;
      const next = value[i + 1];
      if (ch === '\\' && (next === '"' || next === '\\')) {
        text += next;
        i += 2;
      } else if (ch === '"') {
        i++;
        break;
      } else {
        text += ch;
        i++;
      }
    }
    if (i < n && !isSpace(value[i])) return undefined; // strings are separated by whitespace
    while (isSpace(value[i])) i++;
  }
  return text;
}

/** The maximum length of one character-string in a TXT record. */
export const TXT_CHUNK_LENGTH = 255;

/**
 * Encodes text in presentation form the way OVH answers it: quoted, `"` and `\` escaped, split into
 * strings of at most `chunk` characters (code points) separated by one space.
 * parseTxtPresentation(formatTxtPresentation(t)) === t for every t.
 */
export function formatTxtPresentation(text: string, chunk: number = TXT_CHUNK_LENGTH): string {
  const chars = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length || i === 0; i += chunk) {
    const piece = chars.slice(i, i + chunk).join('');
    pieces.push(`"${piece.replace(/[\\"]/g, (c) => `\\${c}`)}"`);
  }
  return pieces.join(' ');
}

/**
 * The text of a TXT target as a caller gives it or as OVH answers it:
 * 1. entirely in presentation form (`"…"`, `"…" "…"`, with `\"` and `\\` escapes): the strings,
 *    unescaped and joined;
 * 2. otherwise, wrapped in one pair of double quotes (OVH quotes its answers without always
 *    escaping inner quotes, e.g. `"say "hi""`): the inside, with the pair removed;
 * 3. otherwise the value itself.
 * A text t with decodeTxt(t) === t is unambiguous; canonicalTarget accepts only such texts, so a
 * canonical TXT value means the same whether or not it has gone through OVH's quoting.
 */
export function decodeTxt(value: string): string {
  const parsed = parseTxtPresentation(value);
  if (parsed !== undefined) return parsed;
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) return value.slice(1, -1);
  return value;
}
