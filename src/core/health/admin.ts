/**
 * An admin sets or clears a tenant's health check of a record set (`dnsplane health-check set`): the
 * way for sets written through doors that carry no labels (the served OVH API, DNS UPDATE). Under the
 * zone lock, on the tenant's own ownership rows of the set only; an ownership change (generation + 1,
 * no OVH call), journalled as an admin action.
 */
import type pg from 'pg';
import { checkHealthCheck } from '../../dns/health-check.js';
import { InvalidInputError } from '../../dns/errors.js';
import { isInZone, normalizeName } from '../../dns/names.js';
import { parseRecordType } from '../../dns/endpoint.js';
import * as store from '../../store/index.js';
import { auditAdminAction } from '../journal/audit.js';
import { NotFoundError } from '../errors.js';

export interface SetCheckInput {
  zone: string;
  name: string;
  type: string;
  tenant: string;
  /** The check's URL; null: none. */
  check: string | null;
}

export async function setHealthCheck(pool: pg.Pool, input: SetCheckInput, lockTimeoutMs = 30_000): Promise<{ summary: string; generation: bigint }> {
  const zone = normalizeName(input.zone, 'ZONE');
  // NAME as in a zone file: relative to ZONE unless it is inside it already ('@': the apex).
  const given = normalizeName(input.name === '@' ? zone : input.name, 'NAME', { allowUnderscore: true, allowWildcard: true });
  const dnsName = isInZone(given, zone) ? given : normalizeName(`${given}.${zone}`, 'NAME', { allowUnderscore: true, allowWildcard: true });
  const recordType = parseRecordType(input.type, 'TYPE');
  if (input.check !== null) checkHealthCheck(input.check, recordType, 'URL');
  if (!(await store.getZone(pool, zone))) throw new NotFoundError('zone', zone);
  const tenant = await store.getTenantByName(pool, input.tenant);
  if (!tenant) throw new NotFoundError('tenant', input.tenant);
  return store.withZoneLock(pool, zone, { lockTimeoutMs }, async (tx) => {
    const mine = (await store.listOwnershipForSets(tx, zone, [{ dnsName, recordType }])).filter((r) => r.tenantId === tenant.id);
    if (mine.length === 0) throw new InvalidInputError('NAME', `tenant "${tenant.name}" owns no target of ${dnsName} ${recordType}`);
    await store.setHealthChecks(tx, zone, tenant.id, [{ dnsName, recordType, check: input.check }]);
    const generation = await store.bumpGeneration(tx, zone);
    await store.notifyZoneChanged(tx, zone, generation, { ids: [], sets: [{ dnsName, recordType }] });
    const summary = `${dnsName} ${recordType}: tenant ${tenant.name}'s health check ${input.check === null ? 'removed' : `set to ${input.check}`}`;
    await auditAdminAction(tx, zone, null, 'set-health-check', summary, { dnsName, recordType, tenant: tenant.name, check: input.check });
    return { summary, generation };
  });
}
