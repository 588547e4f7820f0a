/**
 * The record routes of the served OVH API, as OVH answers them, over core's draft (core/ovh-api/draft-view.ts
 * reads it, core/ovh-api/staging.ts writes it): GET …/record (ids, or pages of full records in OVH's expanded
 * list mode; `fieldType` and `subDomain` filters, subDomain without regard to case), POST …/record
 * (the record staged, answered with its id), GET|PUT|DELETE …/record/{id}. Bodies are validated by
 * OVH's rules and answered with OVH's messages (ovhwire/records.ts) before core judges them by
 * dnsplane's (ownership, grants, stricter targets).
 */
import { draftRecord, draftRecords, tenantZone, type DraftRecord, type RecordFilter } from '../core/ovh-api/draft-view.js';
import type { CoreContext } from '../core/context.js';
import { stageCreate, stageDelete, stageUpdate } from '../core/ovh-api/staging.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { badRequest, objectNotFound } from '../ovhwire/errors.js';
import { expandedPage, pagingOf } from '../ovhwire/paging.js';
import {
  CREATE_PROPERTIES,
  UPDATE_PROPERTIES,
  bodyObject,
  checkProperties,
  isFieldType,
  normalizePatch,
  normalizeRecord,
  recordAnswer,
  schemaFieldType,
} from '../ovhwire/records.js';
import { recordIdOf } from '../ovhwire/routes.js';
import { PermissionDeniedError } from '../core/errors.js';
import type { Answer } from './http.js';

/** What a record route gets of its call. */
export interface RecordCall {
  method: string;
  query: URLSearchParams;
  /** Lower-case names. */
  headers: Readonly<Record<string, string | undefined>>;
  body: unknown;
  bodyInvalid: boolean;
  /** The client address of the call (behind a trusted proxy, the client's): a refresh's journal row says it. */
  from: string;
}

function answer(zone: string, r: DraftRecord, id = r.id): Record<string, unknown> {
  // Already in the form OVH answers (TXT quoted): not quoted again.
  return recordAnswer(zone, { ...r, id }, false);
}

/** `fieldType` and `subDomain` as OVH reads them: an unknown type is its 400; an empty subDomain filters nothing. */
function filterOf(query: URLSearchParams): RecordFilter {
  const fieldType = query.get('fieldType') ?? '';
  if (fieldType !== '' && !isFieldType(fieldType))
    throw badRequest(`[fieldType] Given data (${fieldType}) does not belong to the NamedResolutionFieldTypeEnum enumeration`);
  const subDomain = query.get('subDomain') ?? '';
  return { ...(fieldType !== '' ? { fieldType } : {}), ...(subDomain !== '' ? { subDomain } : {}) };
}

/** GET|POST …/record. */
export async function recordsCall(ctx: CoreContext, tenant: Tenant, rawZone: string, call: RecordCall): Promise<Answer> {
  if (call.method === 'GET') {
    const zone = await tenantZone(ctx, tenant, rawZone);
    const filter = filterOf(call.query);
    if (call.headers['x-pagination-mode'] === undefined) {
      return { json: (await draftRecords(ctx, tenant, zone, filter)).map((r) => Number(r.id)) };
    }
    const paging = pagingOf(call.headers);
    const { page, headers } = expandedPage(await draftRecords(ctx, tenant, zone, filter), paging);
    return { json: page.map((r) => answer(zone, r)), headers };
  }
  const zone = await tenantZone(ctx, tenant, rawZone);
  const body = bodyObject(call.body, call.bodyInvalid);
  checkProperties(body, CREATE_PROPERTIES.writable, CREATE_PROPERTIES.readOnly, true);
  schemaFieldType(body['fieldType']);
  const record = normalizeRecord(body, zone);
  const created = await stageCreate(ctx, tenant, zone, { ...record, ttlSet: body['ttl'] !== undefined });
  return { json: answer(zone, created) };
}

/** GET|PUT|DELETE …/record/{id}. An id the client holds answers with that id, whatever OVH id it became. */
export async function recordCall(ctx: CoreContext, tenant: Tenant, rawZone: string, rawId: string, call: RecordCall): Promise<Answer> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  const id = recordIdOf(rawId);
  switch (call.method) {
    case 'GET': {
      const found = await draftRecord(ctx, tenant, zone, id);
      if (found.kind === 'foreign') throw new PermissionDeniedError('id', `record ${id} of zone ${zone} is not tenant "${tenant.name}"'s`);
      if (found.kind === 'absent') throw objectNotFound(id);
      return { json: answer(zone, found.record, id) };
    }
    case 'DELETE':
      await stageDelete(ctx, tenant, zone, id);
      return { empty: 200 };
    default: {
      const body = bodyObject(call.body, call.bodyInvalid);
      checkProperties(body, UPDATE_PROPERTIES.writable, UPDATE_PROPERTIES.readOnly, true);
      const found = await draftRecord(ctx, tenant, zone, id);
      // OVH validates the new values by the record's type: found first (its 404 or 403 before a 400).
      if (found.kind === 'foreign') throw new PermissionDeniedError('id', `record ${id} of zone ${zone} is not tenant "${tenant.name}"'s`);
      if (found.kind === 'absent' || !isFieldType(found.record.fieldType)) throw objectNotFound(id);
      await stageUpdate(ctx, tenant, zone, id, normalizePatch(body, found.record.fieldType, zone));
      return { empty: 200 };
    }
  }
}
