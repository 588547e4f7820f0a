/**
 * What the served OVH API answers to the calls OVH clients make on start to check their credentials,
 * in the shapes OVH answers them, about the key that signed the call: GET /auth/details (Terraform's
 * OVH provider), GET /auth/currentCredential (its older versions), GET /me (scripts; the account is the
 * tenant). The access rules shown are what a key may call here: the DNS routes and these.
 */
import type { OvhKey } from '../core/keys/ovh.js';
import type { Answer } from './http.js';

const RULES = [
  { method: 'GET', path: '/auth/*' },
  { method: 'GET', path: '/me' },
  { method: 'GET', path: '/domain/zone' },
  { method: 'GET', path: '/domain/zone/*' },
  { method: 'POST', path: '/domain/zone/*' },
  { method: 'PUT', path: '/domain/zone/*' },
  { method: 'DELETE', path: '/domain/zone/*' },
];

export function authDetails(key: OvhKey): Answer {
  return {
    json: {
      account: key.tenant.name,
      allowedRoutes: RULES,
      description: `dnsplane tenant ${key.tenant.name}`,
      identities: [],
      method: 'account',
      roles: [],
      user: '',
    },
  };
}

export function currentCredential(key: OvhKey, now: Date): Answer {
  return {
    json: {
      allowedIPs: null,
      applicationId: Number(key.id),
      creation: key.createdAt.toISOString(),
      credentialId: Number(key.id),
      expiration: key.expiresAt?.toISOString() ?? null,
      lastUse: now.toISOString(),
      ovhSupport: false,
      rules: RULES,
      status: 'validated',
    },
  };
}

export function me(key: OvhKey): Answer {
  return { json: { email: '', firstname: '', name: key.tenant.name, nichandle: key.tenant.name, state: 'complete' } };
}
