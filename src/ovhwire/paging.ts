/**
 * OVH's expanded lists: a route marked `x-expanded-response` (GET …/record) answers, when asked with
 * `X-Pagination-Mode: CachedObjectList-Pages`, a page of full objects instead of ids —
 * `X-Pagination-Number` (1-based) and `X-Pagination-Size` in, `X-Pagination-Elements` (the total),
 * `-Number` and `-Size` (the size used) out. The page is cut here; which list it is cut from (cached
 * or fresh) is the server's business.
 */
import { badRequest } from './errors.js';
import { EXPANDED_MODE } from './routes.js';

/** The paging a request asks for (headers by lower-case name), or its 400. */
export function pagingOf(headers: Readonly<Record<string, string | undefined>>): { number: number; size?: number } {
  const mode = headers['x-pagination-mode'];
  if (mode !== EXPANDED_MODE) throw badRequest(`Invalid X-Pagination-Mode: ${mode}`);
  const positive = (name: string): number | undefined => {
    const text = headers[name];
    if (text === undefined) return undefined;
    if (!/^\d{1,9}$/.test(text.trim()) || Number(text) < 1) throw badRequest(`Invalid ${name}: ${text}`);
    return Number(text);
  };
  const size = positive('x-pagination-size');
  return { number: positive('x-pagination-number') ?? 1, ...(size !== undefined ? { size } : {}) };
}

/** One page of `items` and the headers that answer it; no size asked: every item in one page; `maxSize`: the largest page served. */
export function expandedPage<T>(
  items: readonly T[],
  paging: { number: number; size?: number },
  maxSize?: number,
): { page: T[]; headers: Record<string, string> } {
  const total = items.length;
  const size = Math.max(1, Math.min(paging.size ?? Math.max(total, 1), maxSize ?? Number.MAX_SAFE_INTEGER));
  return {
    page: items.slice((paging.number - 1) * size, paging.number * size),
    headers: { 'X-Pagination-Elements': String(total), 'X-Pagination-Number': String(paging.number), 'X-Pagination-Size': String(size) },
  };
}
