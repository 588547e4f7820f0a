// Calls the Connect JSON API of the server that serves the console (same origin): POST
// /dnsplane.v1.<Service>/<Method> with a JSON body; errors come back as {code, message}.
import { getToken } from './session.js';

export class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export async function call(service, method, body = {}) {
  let res;
  try {
    res = await fetch(`/dnsplane.v1.${service}/${method}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'connect-protocol-version': '1',
        authorization: `Bearer ${getToken()}`,
      },
      body: JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    throw new ApiError('unavailable', `the server cannot be reached (${e instanceof Error ? e.message : String(e)})`);
  }
  const text = await res.text();
  let json;
  try {
    json = text === '' ? {} : JSON.parse(text);
  } catch {
    throw new ApiError('unknown', `HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new ApiError(json.code ?? 'unknown', json.message ?? `HTTP ${res.status}`);
  return json;
}

export const zoneApi = (method, body) => call('ZoneService', method, body);
export const adminApi = (method, body) => call('AdminService', method, body);
