/**
 * The routes the served OVH API answers (relative to /ovh/1.0): OVH's DNS routes (ovhwire/routes.ts)
 * but the zone export, and the calls OVH clients make on start to check their credentials — GET
 * /auth/details (Terraform's OVH provider), GET /auth/currentCredential (its older versions), GET /me
 * (scripts). An unknown path is OVH's 404, a known path with another method its 405.
 */
import { methodNotAllowed, routeNotFound } from '../ovhwire/errors.js';
import { resolveRoute, type Route } from '../ovhwire/routes.js';

export type ServedRoute = Exclude<Route, { name: 'export' }> | { name: 'authDetails' } | { name: 'authCredential' } | { name: 'me' };

const CREDENTIAL_ROUTES: Readonly<Record<string, ServedRoute['name']>> = {
  '/auth/details': 'authDetails',
  '/auth/currentCredential': 'authCredential',
  '/me': 'me',
};

/** The route of a call, or OVH's 404 / 405 (OvhApiError). */
export function servedRoute(method: string, path: string): ServedRoute {
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  const credential = CREDENTIAL_ROUTES[p];
  if (credential) {
    if (method !== 'GET') throw methodNotAllowed(['GET']);
    return { name: credential } as ServedRoute;
  }
  const route = resolveRoute(method, p);
  if (route.name === 'export') throw routeNotFound();
  return route;
}
