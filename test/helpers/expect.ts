/**
 * Small assertions shared by the tests (end to end, test/api, test/core).
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { expect } from 'vitest';
import { EndpointSchema, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';
import * as store from '../../src/store/index.js';
import { answeredLines, cachedLines, recordContents } from './invariants.js';

/** The simulator's log as "METHOD path" lines, /auth/time left out. */
export function callLines(sim: OvhSimulator): string[] {
  return sim
    .calls()
    .filter((c) => c.path !== '/auth/time')
    .map((c) => `${c.method} ${c.path}`);
}

/** A protobuf Endpoint. */
export function ep(dnsName: string, recordType: string, targets: string[], ttl = 300): Endpoint {
  return create(EndpointSchema, { dnsName, recordType, targets, ttl });
}

/** The call fails with this Connect code and a message matching `message`. */
export async function expectRejected(p: Promise<unknown>, code: Code, message: RegExp): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e, 'the call should have failed').toBeInstanceOf(ConnectError);
  expect(Code[(e as ConnectError).code]).toBe(Code[code]);
  expect((e as ConnectError).rawMessage).toMatch(message);
  return e as ConnectError;
}

/** The cache of `zone`, record for record, equals the simulator's draft: ids, names, types, TTLs, targets as OVH answers them. */
export async function expectCacheEqualsSimulator(q: store.Queryable, sim: OvhSimulator, zone: string): Promise<void> {
  expect(await cachedLines(q, zone)).toEqual(answeredLines(sim, zone));
}

/** After applies: the draft holds what is published, the cache holds the draft, no apply of the zone is left in flight. */
export async function expectConsistent(q: store.Queryable, sim: OvhSimulator, zone: string): Promise<void> {
  expect(recordContents(sim.draftRecords(zone))).toEqual(recordContents(sim.publishedRecords(zone)));
  await expectCacheEqualsSimulator(q, sim, zone);
  expect((await store.listInFlight(q, zone)).length).toBe(0);
}
