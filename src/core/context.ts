import type pg from 'pg';
import type { Logger } from 'pino';
import type { OvhApi } from '../ovh/client.js';

export interface CoreSettings {
  /** Zones to manage; undefined: every zone of the OVH account. */
  zones?: string[];
  lockTimeoutMs: number;
  planTtlMs: number;
  syncConcurrency: number;
  /** Send CNAME targets relative to these zones (external-dns's --ovh-enable-cname-relative). */
  cnameRelativeZones?: string[];
}

/** What every use case needs. Built once by server.ts. */
export interface CoreContext {
  pool: pg.Pool;
  ovh: OvhApi;
  log: Logger;
  settings: CoreSettings;
}
