/**
 * LOC records (RFC 1876): the text form read and written, and the numbers the wire form holds. Pure.
 *
 * Text: `d1 [m1 [s1]] N|S d2 [m2 [s2]] E|W alt[m] [size[m] [hp[m] [vp[m]]]]`, degrees 0-90 / 0-180,
 * minutes 0-59, seconds 0-59.999, altitude -100000.00 to 42849672.95 m; size, horizontal and vertical
 * precision 0 to 90000000 m, each a digit times a power of ten in centimetres (that is all the wire
 * form holds), by default 1 m, 10000 m and 10 m. The canonical form is BIND's (what dig prints):
 * `52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m`.
 */
import { InvalidInputError } from './errors.js';
import { tokens } from './target-parts.js';

/** A LOC record's numbers as the wire holds them (RFC 1876 §2). */
export interface LocValue {
  /** Thousandths of a second of arc, offset by 2^31 (north positive). */
  latitude: number;
  longitude: number;
  /** Centimetres above -100,000 m. */
  altitude: number;
  /** Each a byte: mantissa (high 4 bits) times 10 to the exponent (low 4 bits), in centimetres. */
  size: number;
  horizontal: number;
  vertical: number;
}

const SHAPE =
  'a LOC target is "d [m [s]] N|S d [m [s]] E|W altitude[m] [size[m] [hp[m] [vp[m]]]]" (RFC 1876, e.g. "52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m")';
const EQUATOR = 2 ** 31;

function decimal(token: string, max: number, places: number, what: string, field: string): number {
  const re = places > 0 ? new RegExp(`^\\d+(\\.\\d{1,${places}})?$`) : /^\d+$/;
  if (!re.test(token) || Number(token) > max)
    throw new InvalidInputError(
      field,
      `${what} must be a number from 0 to ${max}${places > 0 ? ` with at most ${places} decimals` : ''} (got ${JSON.stringify(token)})`,
    );
  return Math.round(Number(token) * 10 ** places);
}

/** Reads `d [m [s]] H` from `parts` at `i`; thousandths of a second of arc, signed. */
function angle(parts: string[], i: number, maxDegrees: number, hemispheres: [string, string], field: string): { value: number; next: number } {
  const nums: string[] = [];
  let j = i;
  while (j < parts.length && nums.length < 3 && !hemispheres.includes((parts[j] as string).toUpperCase())) nums.push(parts[j++] as string);
  const hemisphere = (parts[j] ?? '').toUpperCase();
  if (nums.length === 0 || !hemispheres.includes(hemisphere)) throw new InvalidInputError(field, SHAPE);
  const what = hemispheres[0] === 'N' ? 'latitude' : 'longitude';
  const d = decimal(nums[0] as string, maxDegrees, 0, `the ${what}'s degrees`, field);
  const m = nums[1] === undefined ? 0 : decimal(nums[1], 59, 0, `the ${what}'s minutes`, field);
  const s = nums[2] === undefined ? 0 : decimal(nums[2], 59.999, 3, `the ${what}'s seconds`, field);
  const value = d * 3_600_000 + m * 60_000 + s;
  if (value > maxDegrees * 3_600_000) throw new InvalidInputError(field, `the ${what} is at most ${maxDegrees} degrees`);
  return { value: hemisphere === hemispheres[0] ? value : -value, next: j + 1 };
}

function metres(token: string): string {
  return token.endsWith('m') || token.endsWith('M') ? token.slice(0, -1) : token;
}

/** A size or precision in metres as its byte; only a digit times a power of ten in centimetres is held. */
function precisionByte(token: string, what: string, field: string): number {
  let cm = decimal(metres(token), 90_000_000, 2, what, field);
  let exponent = 0;
  while (cm >= 10 && cm % 10 === 0) {
    cm /= 10;
    exponent++;
  }
  if (cm > 9 || exponent > 9) {
    throw new InvalidInputError(
      field,
      `${what} must be one digit times a power of ten in centimetres (e.g. 1m, 10m, 0.5m, 10000m; got ${JSON.stringify(token)})`,
    );
  }
  return (cm << 4) | exponent;
}

export function parseLoc(value: string, field: string): LocValue {
  const parts = tokens(value);
  const lat = angle(parts, 0, 90, ['N', 'S'], field);
  const lon = angle(parts, lat.next, 180, ['E', 'W'], field);
  const rest = parts.slice(lon.next);
  if (rest.length < 1 || rest.length > 4) throw new InvalidInputError(field, SHAPE);
  const alt = metres(rest[0] as string);
  if (!/^-?\d+(\.\d{1,2})?$/.test(alt) || Number(alt) < -100_000 || Number(alt) > 42_849_672.95) {
    throw new InvalidInputError(
      field,
      `the LOC altitude must be from -100000.00 to 42849672.95 metres, with at most 2 decimals (got ${JSON.stringify(rest[0])})`,
    );
  }
  return {
    latitude: EQUATOR + lat.value,
    longitude: EQUATOR + lon.value,
    altitude: Math.round(Number(alt) * 100) + 10_000_000,
    size: precisionByte(rest[1] ?? '1m', 'the LOC size', field),
    horizontal: precisionByte(rest[2] ?? '10000m', 'the LOC horizontal precision', field),
    vertical: precisionByte(rest[3] ?? '10m', 'the LOC vertical precision', field),
  };
}

function angleText(offset: number, hemispheres: [string, string]): string {
  const v = offset - EQUATOR;
  const abs = Math.abs(v);
  const d = Math.floor(abs / 3_600_000);
  const m = Math.floor((abs % 3_600_000) / 60_000);
  const ms = abs % 60_000;
  return `${d} ${m} ${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')} ${v >= 0 ? hemispheres[0] : hemispheres[1]}`;
}

function centimetres(cm: number): string {
  return cm % 100 === 0 ? `${cm / 100}m` : `${Math.floor(cm / 100)}.${String(cm % 100).padStart(2, '0')}m`;
}

function precisionText(byte: number): string {
  return centimetres((byte >> 4) * 10 ** (byte & 0x0f));
}

/** BIND's text of a LOC record (see the module comment). */
export function formatLoc(v: LocValue): string {
  const alt = v.altitude - 10_000_000;
  const altText = `${alt < 0 ? '-' : ''}${Math.floor(Math.abs(alt) / 100)}.${String(Math.abs(alt) % 100).padStart(2, '0')}m`;
  return `${angleText(v.latitude, ['N', 'S'])} ${angleText(v.longitude, ['E', 'W'])} ${altText} ${precisionText(v.size)} ${precisionText(v.horizontal)} ${precisionText(v.vertical)}`;
}

export function canonicalLoc(value: string, field: string): string {
  return formatLoc(parseLoc(value, field));
}
