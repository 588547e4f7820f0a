/**
 * The routes of OVH's /1.0 DNS API (REFERENCE.md §1) and the methods each offers, as both the
 * simulator and the OVH API dnsplane serves (ovhapi/) route a call: an unknown path is OVH's 404 "Got
 * an invalid (or empty) URL", a known path with a method it does not offer a 405. Paths are relative
 * to the API's base (/1.0), without the query.
 */
import { badRequest, methodNotAllowed, routeNotFound } from './errors.js';

/** The only X-Pagination-Mode OVH's expanded lists use here: pages of full objects. */
export const EXPANDED_MODE = 'CachedObjectList-Pages';

export type Route =
  | { name: 'authTime' }
  | { name: 'zones' }
  | { name: 'zone'; zone: string }
  | { name: 'records'; zone: string }
  | { name: 'record'; zone: string; id: string }
  | { name: 'refresh'; zone: string }
  | { name: 'soa'; zone: string }
  | { name: 'export'; zone: string }
  | { name: 'status'; zone: string };

export const ROUTE_METHODS: Readonly<Record<Route['name'], readonly string[]>> = {
  authTime: ['GET'],
  zones: ['GET'],
  zone: ['GET'],
  records: ['GET', 'POST'],
  record: ['GET', 'PUT', 'DELETE'],
  refresh: ['POST'],
  soa: ['GET'],
  export: ['GET'],
  status: ['GET'],
};

const ZONE_LEAVES = { refresh: 'refresh', soa: 'soa', export: 'export', status: 'status' } as const;

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The route of a path relative to /1.0; undefined when OVH has none. */
export function matchRoute(path: string): Route | undefined {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (p === '/auth/time') return { name: 'authTime' };
  const parts = p.split('/');
  if (parts[0] !== '' || parts[1] !== 'domain' || parts[2] !== 'zone') return undefined;
  if (parts.length === 3) return { name: 'zones' };
  const zone = decode(parts[3] ?? '').toLowerCase();
  if (zone === '') return undefined;
  if (parts.length === 4) return { name: 'zone', zone };
  const leaf = parts[4] ?? '';
  if (leaf === 'record') {
    if (parts.length === 5) return { name: 'records', zone };
    if (parts.length === 6 && parts[5]) return { name: 'record', zone, id: decode(parts[5]) };
    return undefined;
  }
  if (parts.length === 5 && leaf in ZONE_LEAVES) return { name: ZONE_LEAVES[leaf as keyof typeof ZONE_LEAVES], zone };
  return undefined;
}

/** Resolves the route and checks the method; throws OVH's 404 / 405. */
export function resolveRoute(method: string, path: string): Route {
  const route = matchRoute(path);
  if (!route) throw routeNotFound();
  const allowed = ROUTE_METHODS[route.name];
  if (!allowed.includes(method)) throw methodNotAllowed(allowed);
  return route;
}

/** A record id as OVH reads it from a path: up to 16 digits (a long), else its 400. */
export function recordIdOf(idText: string): string {
  if (!/^\d{1,16}$/.test(idText)) throw badRequest(`[id] Given data (${idText}) is not valid for type long`);
  return idText;
}
