/**
 * OVH's wire, pure (src/ovhwire/): the signed URL forms per scheme, the signature compared, the
 * expanded lists' paging, the served routes and their 404/405.
 */
import { describe, expect, it } from 'vitest';
import { OvhApiError } from '../../src/ovhwire/errors.js';
import { expandedPage, pagingOf } from '../../src/ovhwire/paging.js';
import { resolveRoute } from '../../src/ovhwire/routes.js';
import { signatureMatches, signedUrlCandidates, signRequest } from '../../src/ovhwire/signature.js';
import { servedRoute } from '../../src/ovhapi/routes.js';

describe('signature', () => {
  it('candidates: each scheme given, the Host with and without its port', () => {
    expect(signedUrlCandidates('d.example:8080', '/ovh/1.0/a?x=1', ['https', 'http'])).toEqual([
      'https://d.example:8080/ovh/1.0/a?x=1',
      'https://d.example/ovh/1.0/a?x=1',
      'http://d.example:8080/ovh/1.0/a?x=1',
      'http://d.example/ovh/1.0/a?x=1',
    ]);
    expect(signedUrlCandidates('d.example', '/x')).toEqual(['https://d.example/x']);
  });

  it('a signature matches when one candidate is the URL signed, and then only', () => {
    const sig = signRequest('as', 'ck', 'GET', 'http://h:1/x', '', '10');
    expect(signatureMatches(sig, 'as', 'ck', 'GET', ['https://h/x', 'http://h:1/x'], '', '10')).toBe(true);
    expect(signatureMatches(sig, 'as', 'ck', 'GET', ['https://h/x'], '', '10')).toBe(false);
    expect(signatureMatches(sig.toUpperCase(), 'as', 'ck', 'GET', ['http://h:1/x'], '', '10')).toBe(false);
    expect(signatureMatches(`${sig}0`, 'as', 'ck', 'GET', ['http://h:1/x'], '', '10')).toBe(false);
  });
});

describe('expanded lists', () => {
  it("pages of the asked size (all in one without a size), the headers that say so; bad paging is OVH's 400", () => {
    const items = [1, 2, 3, 4, 5];
    expect(expandedPage(items, pagingOf({ 'x-pagination-mode': 'CachedObjectList-Pages', 'x-pagination-size': '2', 'x-pagination-number': '3' }))).toEqual({
      page: [5],
      headers: { 'X-Pagination-Elements': '5', 'X-Pagination-Number': '3', 'X-Pagination-Size': '2' },
    });
    expect(expandedPage(items, pagingOf({ 'x-pagination-mode': 'CachedObjectList-Pages' })).page).toEqual(items);
    expect(expandedPage([], { number: 1 }).headers['X-Pagination-Size']).toBe('1');
    expect(() => pagingOf({ 'x-pagination-mode': 'CachedObjectList-Pages', 'x-pagination-size': 'x' })).toThrow(OvhApiError);
  });
});

describe('routes', () => {
  it("OVH's DNS routes, the schema's zone routes (export, import, tasks, capabilities, PUT soa) and the credential checks clients make; unknown paths are 404, other methods 405", () => {
    expect(resolveRoute('GET', '/domain/zone/Ex.Test/record/12')).toEqual({ name: 'record', zone: 'ex.test', id: '12' });
    expect(servedRoute('GET', '/auth/details')).toEqual({ name: 'authDetails' });
    expect(servedRoute('GET', '/auth/currentCredential/')).toEqual({ name: 'authCredential' });
    expect(servedRoute('POST', '/domain/zone/ex.test/refresh')).toEqual({ name: 'refresh', zone: 'ex.test' });
    const fails = (method: string, path: string) => {
      try {
        servedRoute(method, path);
      } catch (e) {
        return [(e as OvhApiError).status, (e as OvhApiError).headers['Allow'] ?? ''];
      }
      return 'served';
    };
    expect(servedRoute('GET', '/domain/zone/ex.test/export')).toEqual({ name: 'export', zone: 'ex.test' });
    expect(servedRoute('POST', '/domain/zone/ex.test/import')).toEqual({ name: 'import', zone: 'ex.test' });
    expect(servedRoute('GET', '/domain/zone/ex.test/task/7')).toEqual({ name: 'task', zone: 'ex.test', id: '7' });
    expect(servedRoute('PUT', '/domain/zone/ex.test/soa')).toEqual({ name: 'soaUpdate', zone: 'ex.test' });
    expect(fails('GET', '/domain/zone/ex.test/import')).toEqual([405, 'POST']);
    expect(fails('GET', '/domain/zone/ex.test/dnssec')).toEqual([404, '']);
    expect(fails('GET', '/me/bill')).toEqual([404, '']);
    expect(fails('PUT', '/auth/details')).toEqual([405, 'GET']);
    expect(fails('POST', '/domain/zone/ex.test/record/1')).toEqual([405, 'GET, PUT, DELETE']);
  });
});
