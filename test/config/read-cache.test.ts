/**
 * DNSPLANE_READ_CACHE_BYTES (src/config/config.ts, core/reads/sizing.ts): the bound of what a replica keeps of
 * its zones — unset, a quarter of V8's heap limit (at least 128Mi); the forms it takes; bad values
 * refused naming the setting and the rule; the manifests' own value, a quarter of their memory limit.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { DEFAULT_READ_CACHE_BYTES, defaultReadCacheBytes } from '../../src/core/reads/read-cache.js';

const bound = (env: Record<string, string>) => loadConfig({ DNSPLANE_DEMO: 'true', ...env }).readCacheBytes;

describe('DNSPLANE_READ_CACHE_BYTES', () => {
  it('unset, follows the heap: a quarter of its limit, at least 128Mi', () => {
    expect(bound({})).toBeUndefined();
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '' })).toBeUndefined(); // empty: unset, as every setting
    expect(defaultReadCacheBytes(4 * 2 ** 30)).toBe(2 ** 30);
    expect(defaultReadCacheBytes(256 * 2 ** 20)).toBe(DEFAULT_READ_CACHE_BYTES);
    expect(DEFAULT_READ_CACHE_BYTES).toBe(128 * 2 ** 20);
  });

  it('is set in the manifests to a quarter of the memory limit they give the dnsplane container', () => {
    const deployment = readFileSync(new URL('../../deploy/kubernetes/dnsplane/deployment.yaml', import.meta.url), 'utf8');
    const configmap = readFileSync(new URL('../../deploy/kubernetes/dnsplane/configmap.yaml', import.meta.url), 'utf8');
    const limit = /limits:\s*\n\s*memory:\s*(\d+)Mi/.exec(deployment);
    const set = /DNSPLANE_READ_CACHE_BYTES:\s*(\d+)Mi/.exec(configmap);
    expect(Number(limit?.[1])).toBe(4 * Number(set?.[1]));
  });

  it('reads bytes, Ki, Mi and Gi', () => {
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '2097152' })).toBe(2 * 2 ** 20);
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '4096Ki' })).toBe(4 * 2 ** 20);
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: ' 64Mi ' })).toBe(64 * 2 ** 20);
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '1Gi' })).toBe(2 ** 30);
  });

  it('refuses bad values, naming the setting and the rule', () => {
    for (const bad of ['128MB', '-5', '1.5Gi', 'lots', '99999999999999999999']) {
      expect(() => bound({ DNSPLANE_READ_CACHE_BYTES: bad }), bad).toThrow(
        /^DNSPLANE_READ_CACHE_BYTES: must be a size in bytes, as an integer or with the unit Ki, Mi or Gi/,
      );
    }
    expect(() => bound({ DNSPLANE_READ_CACHE_BYTES: '1000' })).toThrow('DNSPLANE_READ_CACHE_BYTES: must be at least 1Mi (1048576 bytes), got "1000"');
  });
});
