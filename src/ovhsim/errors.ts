/**
 * The bodies of the simulator's injected faults (faults.ts): a `{status}` fault that gives none sends
 * what OVH's API sends for that status (ovhwire/errors.ts). The answers of the API itself are
 * ovhwire's.
 */
import { objectNotFound, routeNotFound, serviceNotFound, statusBody, type OvhErrorBody } from '../ovhwire/errors.js';

/**
 * The body an injected `{status}` fault sends when it gives none. A 404 names what the path points at:
 * a record (`The requested object (id = …) does not exist`), a zone, or nothing known.
 */
export function defaultFaultBody(status: number, path: string): OvhErrorBody {
  if (status === 404) {
    const record = /^\/domain\/zone\/[^/]+\/record\/([^/]+)$/.exec(path);
    if (record?.[1] !== undefined) return objectNotFound(record[1]).body;
    if (/^\/domain\/zone\/[^/]+/.test(path)) return serviceNotFound().body;
    return routeNotFound().body;
  }
  return statusBody(status);
}
