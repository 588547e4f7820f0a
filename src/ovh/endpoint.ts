import { InvalidInputError } from '../dns/errors.js';

/** Where the OVH API is: a known region name or an https URL (a private endpoint or the simulator). */
export interface OvhEndpoint {
  host: string;
  port: number;
  basePath: string;
  /** What the user configured, for logs. */
  label: string;
}

const REGIONS: Record<string, string> = {
  'ovh-eu': 'eu.api.ovh.com',
  'ovh-ca': 'ca.api.ovh.com',
  'ovh-us': 'api.us.ovhcloud.com',
};

export function parseOvhEndpoint(value: string, field = 'OVH_ENDPOINT'): OvhEndpoint {
  const v = value.trim();
  const region = REGIONS[v];
  if (region) return { host: region, port: 443, basePath: '/1.0', label: v };
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new InvalidInputError(field, `must be one of ${Object.keys(REGIONS).join(', ')} or an https://host[:port] URL, got "${v}"`);
  }
  if (url.protocol !== 'https:') throw new InvalidInputError(field, `the OVH API is only reached over https, got "${url.protocol}"`);
  const path = url.pathname.replace(/\/+$/, '');
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : 443,
    basePath: path === '' ? '/1.0' : path,
    label: `${url.protocol}//${url.host}${path === '' ? '/1.0' : path}`,
  };
}
