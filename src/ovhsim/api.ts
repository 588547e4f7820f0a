/**
 * The DNS routes of OVH's /1.0 API over SimState: routing, validation, answers. Pure request -> answer
 * (no HTTP here); the server adds authentication, faults, latency, the call log and persistence.
 */
import { badRequest, objectNotFound, serviceNotFound } from '../ovhwire/errors.js';
import { CREATE_PROPERTIES, UPDATE_PROPERTIES, bodyObject, checkProperties, isFieldType, normalizeRecord, recordAnswer } from '../ovhwire/records.js';
import { expandedPage, pagingOf } from '../ovhwire/paging.js';
import { recordIdOf, type Route } from '../ovhwire/routes.js';
import { bindZoneFile } from './records.js';
import type { SimState, StoredRecord, ZoneState } from './state.js';
import type { SimBehavior } from './types.js';

export interface ApiRequest {
  method: string;
  /** Relative to /1.0, without query, as sent. */
  path: string;
  query: Record<string, string>;
  /** Parsed JSON body; undefined when there was none. */
  body: unknown;
  /** True when a body was sent and is not JSON. */
  bodyInvalid: boolean;
  /** Request headers that change an answer (paging: x-pagination-*, pragma), lower-case names. */
  headers?: Record<string, string>;
  /** Who calls (the consumer key): server-side list caches are per caller. */
  caller?: string;
}

export interface ApiAnswer {
  status: number;
  /** JSON value to send; undefined: no body. */
  body?: unknown;
  /** The state changed (persist it). */
  changed: boolean;
  /** Answer headers beyond the ones every answer has. */
  headers?: Record<string, string>;
}

/** One cached expanded list: the objects as they were when it was built. */
interface CachedList {
  builtAt: number;
  items: Array<Record<string, unknown>>;
}

export class ApiRouter {
  /** Expanded lists cached server-side, per caller and (path, query): see SimBehavior.expandedListCacheSeconds. */
  private readonly listCache = new Map<string, CachedList>();

  constructor(
    private readonly state: SimState,
    private readonly behavior: SimBehavior,
    /** Server time in seconds (now + drift). */
    private readonly serverTime: () => number,
  ) {}

  /** Answers a routed call. Throws OvhApiError for error answers; the state is unchanged then. */
  handle(route: Route, req: ApiRequest): ApiAnswer {
    if (route.name === 'authTime') return { status: 200, body: this.serverTime(), changed: false };
    if (route.name === 'zones') return { status: 200, body: this.state.zoneNames(), changed: false };
    const zone = this.state.zone(route.zone);
    if (!zone) throw serviceNotFound();
    const b = this.behavior;
    switch (route.name) {
      case 'zone':
        return {
          status: 200,
          body: { name: zone.name, nameServers: [...b.nameServers], dnssecSupported: true, hasDnsAnycast: false, lastUpdate: zone.lastUpdate },
          changed: false,
        };
      case 'records':
        return req.method === 'GET' ? this.listRecords(zone, req) : this.createRecord(zone, req);
      case 'record':
        return this.recordCall(zone, route.id, req);
      case 'refresh':
        this.state.publish(zone);
        return b.refreshStatus === 204 ? { status: 204, changed: true } : { status: 200, body: null, changed: true };
      case 'soa':
        return {
          status: 200,
          body: {
            email: b.soa.email,
            expire: b.soa.expire,
            nxDomainTtl: b.soa.nxDomainTtl,
            refresh: b.soa.refresh,
            serial: zone.serial,
            server: b.nameServers[0] ?? '',
            ttl: b.soa.ttl,
          },
          changed: false,
        };
      case 'export':
        return {
          status: 200,
          body: bindZoneFile(zone.name, this.state.draftList(zone), zone.serial, b.soa, b.nameServers, b.defaultTtl),
          changed: false,
        };
      case 'status':
        return { status: 200, body: { isDeployed: this.state.isDeployed(zone), errors: [], warnings: [] }, changed: false };
    }
  }

  /** A record as the API shows it. */
  recordBody(zone: ZoneState, r: StoredRecord): Record<string, unknown> {
    return recordAnswer(zone.name, r, this.behavior.quoteTxtInAnswers);
  }

  private listRecords(zone: ZoneState, req: ApiRequest): ApiAnswer {
    const fieldType: string | undefined = req.query.fieldType;
    let subDomain: string | undefined = req.query.subDomain;
    if (fieldType !== undefined && fieldType !== '' && !isFieldType(fieldType)) {
      throw badRequest(`[fieldType] Given data (${fieldType}) does not belong to the NamedResolutionFieldTypeEnum enumeration`);
    }
    if (subDomain === '' && this.behavior.emptySubDomainFilter === 'ignore') subDomain = undefined;
    const filter = { fieldType: fieldType || undefined, subDomain };
    const mode = req.headers?.['x-pagination-mode'];
    if (mode !== undefined && this.behavior.expandedRecordLists !== 'ignored') return this.expandedList(zone, req, filter);
    const ids = this.state.listIds(zone, filter);
    return { status: 200, body: ids, changed: false };
  }

  clearListCache(): void {
    this.listCache.clear();
  }

  /**
   * GET …/record in expanded mode: one page of full record objects, out of a list cached per caller and
   * (path, query) unless the request says `Pragma: no-cache` (see SimBehavior).
   */
  private expandedList(zone: ZoneState, req: ApiRequest, filter: { fieldType?: string; subDomain?: string }): ApiAnswer {
    const b = this.behavior;
    if (b.expandedRecordLists === 'refused') throw badRequest('The pagination mode is not supported on this route');
    const headers = req.headers ?? {};
    const paging = pagingOf(headers);
    const key = `${req.caller ?? ''} ${req.path} ${JSON.stringify(Object.entries(req.query).sort())}`;
    const now = Date.now();
    const noCache = /(^|,)\s*no-cache\s*($|,)/i.test(headers['pragma'] ?? '');
    let list = this.listCache.get(key);
    if (noCache || !list || now - list.builtAt >= b.expandedListCacheSeconds * 1000) {
      const items = this.state.listIds(zone, filter).map((id) => this.recordBody(zone, zone.draft.get(id)!));
      list = { builtAt: now, items };
      if (b.expandedListCacheSeconds > 0) this.listCache.set(key, list);
      else this.listCache.delete(key);
    }
    const { page, headers: answer } = expandedPage(list.items, paging, b.expandedListMaxPageSize ?? undefined);
    return { status: 200, body: page, changed: false, headers: answer };
  }

  private createRecord(zone: ZoneState, req: ApiRequest): ApiAnswer {
    const body = bodyObject(req.body, req.bodyInvalid);
    checkProperties(body, CREATE_PROPERTIES.writable, CREATE_PROPERTIES.readOnly, this.behavior.rejectUnknownProperties);
    const data = normalizeRecord(body, zone.name);
    const rec = this.state.createRecord(zone, data);
    return { status: 200, body: this.recordBody(zone, rec), changed: true };
  }

  private recordCall(zone: ZoneState, idText: string, req: ApiRequest): ApiAnswer {
    const rec = zone.draft.get(Number(recordIdOf(idText)));
    if (!rec) throw objectNotFound(idText);
    switch (req.method) {
      case 'GET':
        return { status: 200, body: this.recordBody(zone, rec), changed: false };
      case 'DELETE':
        this.state.deleteRecord(zone, rec.id);
        return { status: 200, changed: true };
      default: {
        const body = bodyObject(req.body, req.bodyInvalid);
        checkProperties(body, UPDATE_PROPERTIES.writable, UPDATE_PROPERTIES.readOnly, this.behavior.rejectUnknownProperties);
        this.state.updateRecord(zone, rec, body);
        return { status: 200, changed: true };
      }
    }
  }
}
