/**
 * A poll that has the current generations is answered from memory (notModifiedNow), and the answer
 * made for one (query, tenant, states kept) is handed out again while all three are the same: these
 * tests pin down that it is never handed out once any of them changed.
 */
import { describe, expect, it } from 'vitest';
import type { CoreContext } from '../../src/core/context.js';
import { PermissionDeniedError } from '../../src/core/errors.js';
import type { ReadCache } from '../../src/core/reads/read-cache.js';
import { notModifiedNow, type RecordsQuery } from '../../src/core/records/records.js';
import { ZoneStateSource } from '../../src/core/reads/zone-states.js';
import type { Tenant } from '../../src/core/tenants/tenants.js';

const ZONE = 'a.test';

function tenant(name: string, zones: string[]): Tenant {
  return { id: '1', name, scopes: [], zones, suffixes: [], disabled: false, createdAt: new Date(), tokenRotatedAt: new Date(), maxChangePercent: null };
}

/** A context whose read cache keeps the states of ZONE (generation 5, synced), listening; and the not-modified reads it counted. */
async function context(): Promise<{ ctx: CoreContext; states: ZoneStateSource; counted: string[] }> {
  const states = new ZoneStateSource(
    async () => [
      { name: ZONE, generation: 5n, state: 'synced' },
      { name: 'b.test', generation: 1n, state: 'synced' },
    ],
    () => true,
  );
  await states.get();
  const counted: string[] = [];
  const metrics = { cacheRead: (zone: string, result: string) => counted.push(`${zone} ${result}`) };
  const ctx = { reads: { zoneStates: states } as unknown as ReadCache, metrics } as unknown as CoreContext;
  return { ctx, states, counted };
}

const poll = (generation: bigint): RecordsQuery => ({ zones: [ZONE], knownGenerations: new Map([[ZONE, generation]]), includeForeign: false });

describe('notModifiedNow', () => {
  it('hands the same answer to the same tenant polling the same query while the states kept are the same, counting every poll', async () => {
    const { ctx, counted } = await context();
    const alice = tenant('alice', [ZONE]);
    const q = poll(5n);
    const first = notModifiedNow(ctx, alice, q);
    expect(first).toEqual([{ zone: ZONE, generation: 5n, notModified: true, endpoints: [] }]);
    expect(notModifiedNow(ctx, alice, q)).toBe(first);
    expect(counted).toEqual([`${ZONE} not_modified`, `${ZONE} not_modified`]);
  });

  it('answers again, from the new states, once a generation moved: the caller that still has the old one is not told it is current', async () => {
    const { ctx, states } = await context();
    const alice = tenant('alice', [ZONE]);
    const q = poll(5n);
    expect(notModifiedNow(ctx, alice, q)).toHaveLength(1);
    states.heard(ZONE, 6n);
    expect(notModifiedNow(ctx, alice, q)).toBeUndefined();
    const current = poll(6n);
    expect(notModifiedNow(ctx, alice, current)).toEqual([{ zone: ZONE, generation: 6n, notModified: true, endpoints: [] }]);
  });

  it('never hands one tenant the answer made for another, nor for the same tenant before its zones changed', async () => {
    const { ctx } = await context();
    const q = poll(5n);
    expect(notModifiedNow(ctx, tenant('alice', [ZONE]), q)).toHaveLength(1);
    // Another tenant sending the very same body (the query is shared by its text) is checked on its own.
    expect(() => notModifiedNow(ctx, tenant('bob', ['b.test']), q)).toThrow(PermissionDeniedError);
    // Alice's zones changed: her credentials are read again, a new tenant object.
    expect(() => notModifiedNow(ctx, tenant('alice', ['b.test']), q)).toThrow(PermissionDeniedError);
  });

  it('leaves a caller ahead of the states kept to a fresh read', async () => {
    const { ctx } = await context();
    expect(notModifiedNow(ctx, tenant('alice', [ZONE]), poll(7n))).toBeUndefined();
  });
});
