/**
 * DNSPLANE_READ_CACHE_BYTES (src/config.ts): the Records cache's byte bound — its default (a quarter
 * of the Kubernetes manifests' memory limit), the forms it takes, and bad values refused naming the
 * setting and the rule.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { DEFAULT_READ_CACHE_BYTES } from '../src/core/reads/read-cache.js';

const bound = (env: Record<string, string>) => loadConfig({ DNSPLANE_DEMO: 'true', ...env }).readCacheBytes;

describe('DNSPLANE_READ_CACHE_BYTES', () => {
  it('defaults to 128Mi, a quarter of the memory limit the manifests give the dnsplane container', () => {
    expect(bound({})).toBe(128 * 2 ** 20);
    expect(bound({})).toBe(DEFAULT_READ_CACHE_BYTES);
    const deployment = readFileSync(new URL('../deploy/kubernetes/dnsplane/deployment.yaml', import.meta.url), 'utf8');
    const limit = /limits:\s*\n\s*memory:\s*(\d+)Mi/.exec(deployment);
    expect(Number(limit?.[1]) * 2 ** 20).toBe(4 * DEFAULT_READ_CACHE_BYTES);
  });

  it('reads bytes, Ki, Mi and Gi', () => {
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '2097152' })).toBe(2 * 2 ** 20);
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '4096Ki' })).toBe(4 * 2 ** 20);
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: ' 64Mi ' })).toBe(64 * 2 ** 20);
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '1Gi' })).toBe(2 ** 30);
    expect(bound({ DNSPLANE_READ_CACHE_BYTES: '' })).toBe(DEFAULT_READ_CACHE_BYTES); // empty: unset, as every setting
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
