/**
 * The zone file and task routes of the served OVH API, as OVH's published schema has them: GET
 * …/export (the tenant's records as a zone file, a JSON string), POST …/import ({zoneFile}: applied
 * as the tenant's desired state, answered with a domain.zone.Task), GET …/task (ids) and …/task/{id}
 * (that task), GET …/capabilities (domain.zone.Capabilities: no DynHost here). Core does the work
 * (core/ovh-api/zone-file.ts); bodies are checked as OVH checks them.
 */
import type { CoreContext } from '../core/context.js';
import { exportTenantZone, importZoneFile, zoneTask, zoneTaskIds } from '../core/ovh-api/zone-file.js';
import { tenantZone } from '../core/ovh-api/draft-view.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { badRequest } from '../ovhwire/errors.js';
import { bodyObject, checkProperties } from '../ovhwire/records.js';
import type { Answer } from './http.js';
import type { RecordCall } from './records.js';

export async function exportCall(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<Answer> {
  return { json: await exportTenantZone(ctx, tenant, rawZone) };
}

export async function importCall(ctx: CoreContext, tenant: Tenant, rawZone: string, call: RecordCall, applicationKey: string): Promise<Answer> {
  // The zone first (OVH's 404 before any complaint about the body), read once for the import too.
  const zone = await tenantZone(ctx, tenant, rawZone);
  const body = bodyObject(call.body, call.bodyInvalid);
  checkProperties(body, ['zoneFile'], [], true);
  const zoneFile = body['zoneFile'];
  if (zoneFile === undefined) throw badRequest('[zoneFile] Property is mandatory');
  if (typeof zoneFile !== 'string') throw badRequest(`[zoneFile] Given data (${String(zoneFile)}) is not valid for type string`);
  return { json: await importZoneFile(ctx, tenant, zone, zoneFile, applicationKey) };
}

export async function tasksCall(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<Answer> {
  return { json: await zoneTaskIds(ctx, tenant, rawZone) };
}

export async function taskCall(ctx: CoreContext, tenant: Tenant, rawZone: string, id: string): Promise<Answer> {
  return { json: await zoneTask(ctx, tenant, rawZone, id) };
}

export async function capabilitiesCall(ctx: CoreContext, tenant: Tenant, rawZone: string): Promise<Answer> {
  await tenantZone(ctx, tenant, rawZone);
  return { json: { dynHost: false } };
}
