/**
 * The OVH side of the configuration: whom dnsplane talks to (OVH with the three credentials, the demo
 * simulator, or nobody yet), and where the OVH API dnsplane serves itself is mounted and advertised.
 */
import { readFileSync } from 'node:fs';
import { InvalidInputError } from '../dns/errors.js';
import { parseOvhEndpoint, type OvhEndpoint } from '../ovh/endpoint.js';
import type { OvhCredentials } from '../ovh/client/signed-request.js';
import { parseBoolean, parseListen } from './values.js';

export type OvhConfig =
  | { mode: 'remote'; endpoint: OvhEndpoint; credentials: OvhCredentials; extraCaPems: string[] }
  /**
   * Demo mode: an in-process simulator with a demo zone. Only when nothing is configured (no
   * DATABASE_URL, no OVH_*: `npm start` on a fresh clone) or when asked for (DNSPLANE_DEMO=true).
   */
  | { mode: 'simulator' }
  /**
   * No OVH credentials and no demo: `serve` refuses to start (before touching the database) with
   * `field: rule`; commands that only use the database (tenant, migrate) do not need OVH.
   */
  | { mode: 'unconfigured'; field: string; rule: string };

/** The three OVH credentials: all or none. */
export const OVH_CREDENTIALS = ['OVH_APPLICATION_KEY', 'OVH_APPLICATION_SECRET', 'OVH_CONSUMER_KEY'] as const;

const ASK_FOR_DEMO = 'DNSPLANE_DEMO=true (or dnsplane serve --demo)';

/** Where the served OVH API is mounted on the API port: tools sign URLs with this path in them. */
export const OVH_API_PATH = '/ovh/1.0';

/** The OVH connection from OVH_*, DNSPLANE_DEMO and whether DATABASE_URL is set. */
export function ovhConfig(get: (name: string) => string | undefined): OvhConfig {
  const demoRaw = get('DNSPLANE_DEMO');
  const demoAsked = demoRaw === undefined ? undefined : parseBoolean(demoRaw, 'DNSPLANE_DEMO');
  const given = OVH_CREDENTIALS.filter((n) => get(n) !== undefined);
  const missing = OVH_CREDENTIALS.filter((n) => get(n) === undefined);
  if (given.length > 0 && missing.length > 0) {
    // Half a configuration is a mistake (a Secret that mounted partly), whatever else is set.
    throw new InvalidInputError(
      missing.join(', '),
      `not set while ${given.join(', ')} ${given.length > 1 ? 'are' : 'is'}: the OVH credentials are all three or none. Set the missing ones to talk to OVH` +
        (demoAsked ? '; for the demo, unset every OVH_* variable' : `, or unset them all and ask for the demo on purpose with ${ASK_FOR_DEMO}`),
    );
  } else if (given.length === 0) {
    if (demoAsked === true || (demoAsked === undefined && get('DATABASE_URL') === undefined)) {
      return { mode: 'simulator' };
    } else if (demoAsked === false) {
      return {
        mode: 'unconfigured',
        field: OVH_CREDENTIALS.join(', '),
        rule: `not set and DNSPLANE_DEMO is false: set the three OVH credentials, or ask for the demo with ${ASK_FOR_DEMO}`,
      };
    } else {
      return {
        mode: 'unconfigured',
        field: OVH_CREDENTIALS.join(', '),
        rule: `not set while DATABASE_URL is: dnsplane will not serve a real database from the in-process OVH simulator. Set the three OVH credentials, or ask for the demo on purpose with ${ASK_FOR_DEMO}`,
      };
    }
  } else {
    if (demoAsked === true) {
      throw new InvalidInputError(
        'DNSPLANE_DEMO',
        `true runs the in-process OVH simulator, which cannot go with the OVH credentials that are set (${OVH_CREDENTIALS.join(', ')}): unset DNSPLANE_DEMO to talk to OVH, or unset the OVH_* variables for the demo`,
      );
    }
    const extraCaPems: string[] = [];
    const caFile = get('OVH_CA_FILE');
    if (caFile) {
      extraCaPems.push(readPem(caFile, 'OVH_CA_FILE'));
      // Setting our own CA list replaces Node's default store, which holds NODE_EXTRA_CA_CERTS: keep it.
      const nodeExtra = get('NODE_EXTRA_CA_CERTS');
      if (nodeExtra) extraCaPems.push(readPem(nodeExtra, 'NODE_EXTRA_CA_CERTS'));
    }
    return {
      mode: 'remote',
      endpoint: parseOvhEndpoint(get('OVH_ENDPOINT') ?? 'ovh-eu'),
      credentials: {
        applicationKey: get('OVH_APPLICATION_KEY')!,
        applicationSecret: get('OVH_APPLICATION_SECRET')!,
        consumerKey: get('OVH_CONSUMER_KEY')!,
      },
      extraCaPems,
    };
  }
}

/**
 * DNSPLANE_OVH_API_ADVERTISE: an http(s) URL whose path is exactly /ovh/1.0 (tools sign the URL they
 * call, path included, so a proxy must not rewrite it; go-ovh refuses a trailing slash). Unset:
 * http://DNSPLANE_LISTEN/ovh/1.0 when the listener names a host (not every address, not port 0).
 */
export function ovhApiAdvertise(value: string | undefined, listen: string, field = 'DNSPLANE_OVH_API_ADVERTISE'): string | undefined {
  if (value === undefined) {
    const { host, port } = parseListen(listen);
    if (['0.0.0.0', '::', ''].includes(host) || port === 0) return undefined;
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}${OVH_API_PATH}`;
  }
  const rule = `must be the http(s) URL tools reach the served OVH API at, ending in ${OVH_API_PATH} without a trailing slash (e.g. https://dnsplane.example.com${OVH_API_PATH})`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidInputError(field, `${rule}, got "${value}"`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== OVH_API_PATH || url.search || url.hash || url.username || url.password) {
    throw new InvalidInputError(field, `${rule}, got "${value}"`);
  }
  return `${url.origin}${OVH_API_PATH}`;
}

function readPem(file: string, field: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InvalidInputError(field, `cannot read "${file}": ${(e as Error).message}`);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new InvalidInputError(field, `"${file}" holds no PEM certificate`);
  return text;
}
