/**
 * The routes the served OVH API answers (relative to /ovh/1.0): OVH's DNS routes (ovhwire/routes.ts,
 * the export included), the zone routes of OVH's published schema the simulator does not model —
 * POST …/import, GET …/task and …/task/{id}, GET …/capabilities, PUT …/soa (refused: the SOA is
 * dnsplane's) — and the calls OVH clients make on start to check their credentials — GET
 * /auth/details (Terraform's OVH provider), GET /auth/currentCredential (its older versions), GET /me
 * (scripts). An unknown path is OVH's 404, a known path with another method its 405.
 */
import { methodNotAllowed } from '../ovhwire/errors.js';
import { recordIdOf, resolveRoute, type Route } from '../ovhwire/routes.js';

export type ServedRoute =
  | Route
  | { name: 'authDetails' }
  | { name: 'authCredential' }
  | { name: 'me' }
  | { name: 'import'; zone: string }
  | { name: 'capabilities'; zone: string }
  | { name: 'tasks'; zone: string }
  | { name: 'task'; zone: string; id: string }
  | { name: 'soaUpdate'; zone: string };

const CREDENTIAL_ROUTES: Readonly<Record<string, ServedRoute['name']>> = {
  '/auth/details': 'authDetails',
  '/auth/currentCredential': 'authCredential',
  '/me': 'me',
};

/** The zone routes only the served API has: `/domain/zone/{zone}/<leaf>[/{id}]` and each one's method. */
function schemaRoute(method: string, parts: readonly string[]): ServedRoute | undefined {
  if (parts.length < 5 || parts[1] !== 'domain' || parts[2] !== 'zone') return undefined;
  let zone: string;
  try {
    zone = decodeURIComponent(parts[3] ?? '').toLowerCase();
  } catch {
    return undefined;
  }
  if (zone === '') return undefined;
  const leaf = parts[4];
  const only = (allowed: string, route: ServedRoute): ServedRoute => {
    if (method !== allowed) throw methodNotAllowed([allowed]);
    return route;
  };
  if (parts.length === 5 && leaf === 'import') return only('POST', { name: 'import', zone });
  if (parts.length === 5 && leaf === 'capabilities') return only('GET', { name: 'capabilities', zone });
  if (parts.length === 5 && leaf === 'task') return only('GET', { name: 'tasks', zone });
  if (parts.length === 6 && leaf === 'task' && parts[5]) return only('GET', { name: 'task', zone, id: recordIdOf(parts[5]) });
  if (parts.length === 5 && leaf === 'soa' && method === 'PUT') return { name: 'soaUpdate', zone };
  return undefined;
}

/** The route of a call, or OVH's 404 / 405 (OvhApiError). */
export function servedRoute(method: string, path: string): ServedRoute {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  const credential = CREDENTIAL_ROUTES[p];
  if (credential) {
    if (method !== 'GET') throw methodNotAllowed(['GET']);
    return { name: credential } as ServedRoute;
  }
  return schemaRoute(method, p.split('/')) ?? resolveRoute(method, p);
}
