/**
 * The syntaxes of configuration values (durations, sizes, numbers, booleans, host:port, log format,
 * secrets keys, CORS origins), each refusing a bad value with the variable's name and the rule.
 * config/config.ts reads the environment with them; the CLI parses its flags with the same ones.
 */
import { SECRETS_KEY_RULE } from '../core/keys/secrets.js';
import { InvalidInputError } from '../dns/errors.js';

export function parseDuration(value: string, field: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m) throw new InvalidInputError(field, `must be a duration like 500ms, 30s, 15m, 1h or 7d, got "${value}"`);
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit]!);
}

export function nonNegativeInteger(value: string, field: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw new InvalidInputError(field, `must be an integer >= 0, got "${value}"`);
  return n;
}

export function positiveNumber(value: string, field: string, integer: boolean): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new InvalidInputError(field, `must be a positive ${integer ? 'integer' : 'number'}, got "${value}"`);
  }
  return n;
}

export function oneOf<T extends string>(value: string, field: string, allowed: readonly T[]): T {
  const v = value.trim().toLowerCase();
  const found = allowed.find((a) => a === v);
  if (found === undefined) throw new InvalidInputError(field, `must be one of ${allowed.join(', ')}, got "${value}"`);
  return found;
}

/** A size in bytes: an integer, or one with the binary unit Ki, Mi or Gi (128Mi); at least 1Mi. */
export function parseByteSize(value: string, field: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(value.trim());
  const n = m ? Number(m[1]) * { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2] ?? '']! : NaN;
  if (!Number.isSafeInteger(n))
    throw new InvalidInputError(field, `must be a size in bytes, as an integer or with the unit Ki, Mi or Gi (e.g. 134217728 or 128Mi), got "${value}"`);
  if (n < 2 ** 20) throw new InvalidInputError(field, `must be at least 1Mi (1048576 bytes), got "${value}"`);
  return n;
}

/** DNSPLANE_HEAP_GROWTH: a percentage 1–400 (with or without %), or v8 (V8's own: undefined). */
export function parseHeapGrowth(value: string, field: string): number | undefined {
  const v = value.trim().toLowerCase();
  if (v === 'v8') return undefined;
  const m = /^(\d+)%?$/.exec(v);
  const n = m ? Number(m[1]) : NaN;
  if (!(n >= 1 && n <= 400)) throw new InvalidInputError(field, `must be a percentage from 1% to 400% (e.g. 25%), or v8 for V8's own growth, got "${value}"`);
  return n;
}

export function percent(value: string, field: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 100) throw new InvalidInputError(field, `must be a whole percentage 0-100, got "${value}"`);
  return n;
}

export function parseBoolean(value: string, field: string): boolean {
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new InvalidInputError(field, `must be true or false, got "${value}"`);
}

export function parseListen(value: string, field = 'DNSPLANE_LISTEN'): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new InvalidInputError(field, `must be host:port (port 0-65535), got "${value}"`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

export type LogFormatSetting = 'json' | 'pretty' | 'auto';

/** DNSPLANE_LOG_FORMAT: json, pretty or auto (the default). */
export function parseLogFormat(value: string | undefined): LogFormatSetting {
  const v = (value ?? 'auto').trim().toLowerCase();
  if (v !== 'json' && v !== 'pretty' && v !== 'auto') throw new InvalidInputError('DNSPLANE_LOG_FORMAT', `must be json, pretty or auto, got "${value}"`);
  return v;
}

/** The format logs are written in: auto is pretty when stdout is a terminal, json otherwise. */
export function logFormatOf(setting: LogFormatSetting, stdoutIsTty: boolean): 'json' | 'pretty' {
  return setting === 'auto' ? (stdoutIsTty ? 'pretty' : 'json') : setting;
}

/**
 * The keys of DNSPLANE_SECRETS_KEY or DNSPLANE_SECRETS_KEYS (not both), each 32 bytes in base64, none
 * twice. Messages never show a value (a secret), only which entry is wrong.
 */
export function parseSecretsKeys(one: string | undefined, list: string | undefined): Buffer[] | undefined {
  if (list === undefined) {
    const key = parseSecretsKey(one);
    return key ? [key] : undefined;
  }
  if (one !== undefined)
    throw new InvalidInputError(
      'DNSPLANE_SECRETS_KEYS',
      'set either DNSPLANE_SECRETS_KEY (one key) or DNSPLANE_SECRETS_KEYS (a list, while rotating), not both',
    );
  const entries = list.split(',').map((e) => e.trim());
  if (entries.some((e) => e === ''))
    throw new InvalidInputError('DNSPLANE_SECRETS_KEYS', `must be a comma list of keys with no empty entry; ${SECRETS_KEY_RULE} each`);
  const keys = entries.map((e, i) => parseSecretsKey(e, `DNSPLANE_SECRETS_KEYS[${i}]`)!);
  keys.forEach((k, i) => {
    const first = keys.findIndex((o) => o.equals(k));
    if (first !== i) throw new InvalidInputError(`DNSPLANE_SECRETS_KEYS[${i}]`, `is the same key as DNSPLANE_SECRETS_KEYS[${first}]; list each key once`);
  });
  return keys;
}

/** DNSPLANE_SECRETS_KEY: exactly 32 bytes in base64. The message never shows the value (a secret). */
export function parseSecretsKey(value: string | undefined, field = 'DNSPLANE_SECRETS_KEY'): Buffer | undefined {
  if (value === undefined) return undefined;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0)
    throw new InvalidInputError(field, `${SECRETS_KEY_RULE}; the value set is not base64 (${value.length} characters)`);
  const key = Buffer.from(value, 'base64');
  if (key.length !== 32) throw new InvalidInputError(field, `${SECRETS_KEY_RULE}; the value set decodes to ${key.length} bytes`);
  return key;
}

/**
 * DNSPLANE_CORS_ORIGINS: "*" alone, or origins as a browser sends them (scheme://host[:port], no
 * path); each is normalized (lower-case host, default port dropped) so that it matches the Origin header.
 */
export function parseCorsOrigins(value: string, field = 'DNSPLANE_CORS_ORIGINS'): string[] {
  const items = value
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  if (items.includes('*')) {
    if (items.length > 1) throw new InvalidInputError(field, `"*" allows every origin and cannot be combined with others, got "${value}"`);
    return ['*'];
  }
  return items.map((item, i) => {
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      url = undefined;
    }
    const bare = url && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]+\/?$/i.test(item) && !url.username && !url.password;
    if (!url || !bare || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new InvalidInputError(
        `${field}[${i}]`,
        `must be an origin like https://console.example.com or http://localhost:5173 (scheme, host, optional port; no path), got "${item}"`,
      );
    }
    return url.origin;
  });
}
