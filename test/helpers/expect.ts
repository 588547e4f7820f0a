/**
 * Small assertions shared by the end-to-end tests.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { expect } from 'vitest';
import { EndpointSchema, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';

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
