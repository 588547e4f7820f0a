/**
 * Bad requests, in memory (test/helpers/api-memory.ts): each refused InvalidArgument with a message
 * that names the field (its path in the request) and the rule, before anything is stored or sent —
 * from the handlers, from core's checks of the endpoints, and from the strict reader of every
 * message (api/strict.ts, binary and JSON alike).
 */
import { create } from '@bufbuild/protobuf';
import { WireType } from '@bufbuild/protobuf/wire';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PlanRequestSchema, Policy, ZoneService, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import * as store from '../../src/store/index.js';
import { inMemoryClient } from '../helpers/api-memory.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';
import { ep, expectRejected } from '../helpers/expect.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'valid.test';
let room: ApplyRoom;

beforeAll(async () => {
  room = await applyRoom({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] }, tenants: ['alice'] });
});
afterAll(async () => {
  await room?.close();
});
beforeEach(() => room.sim.clearCalls());

const client = (opts: { useBinaryFormat?: boolean } = {}) => inMemoryClient(room.ctx, ZoneService, room.tokens['alice'], opts);
const planDesired = (endpoints: Endpoint[], policy = Policy.UPSERT_ONLY, zones: string[] = []) =>
  client().plan({ policy, input: { case: 'desired', value: { zones, endpoints } } });

/** Nothing stored (no plan, no journal row) and no OVH call since the test began. */
async function expectNothingDone(): Promise<void> {
  expect(room.calls()).toEqual([]);
  expect(await store.listJournal(room.db.pool, { zone: ZONE, limit: 10 })).toEqual([]);
  const { rows } = await room.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM plans');
  expect(rows[0]!.n).toBe(0);
}

describe('the request itself', () => {
  it('Apply without a source, and force beside an inline plan', async () => {
    await expectRejected(client().apply({}), Code.InvalidArgument, /^source: one of "planId" or "plan" is required$/);
    await expectRejected(
      client().apply({
        force: true,
        source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [] } } } },
      }),
      Code.InvalidArgument,
      /^force: with an inline plan, say force in plan\.force$/,
    );
    await expectNothingDone();
  });

  it('Plan without an input, or a desired state without a policy (the message says what each policy does)', async () => {
    await expectRejected(client().plan({ policy: Policy.UPSERT_ONLY }), Code.InvalidArgument, /^input: one of "desired" or "changes" is required$/);
    await expectRejected(
      client().plan({ input: { case: 'desired', value: { zones: [], endpoints: [] } } }),
      Code.InvalidArgument,
      /^policy: is required with a desired state: POLICY_SYNC .* DELETES the ones not listed/,
    );
    await expectNothingDone();
  });

  it('a journal id that is not one, a known generation of a name that is not one', async () => {
    await expectRejected(client().getApply({ journalId: 'abc' }), Code.InvalidArgument, /^journalId: must be a journal id \(digits\), got "abc"$/);
    await expectRejected(
      client().records({ zones: [ZONE], knownGenerations: { 'bad zone!': 1n } }),
      Code.InvalidArgument,
      /^knownGenerations\["bad zone!"\]: label "bad zone!" contains the character " "/,
    );
    await expectNothingDone();
  });
});

describe('the endpoints', () => {
  it('a name, a target, a TTL, a zone: each named by its path', async () => {
    await expectRejected(
      planDesired([ep(`ok.${ZONE}`, 'A', ['192.0.2.1']), ep(`bad name.${ZONE}`, 'A', ['192.0.2.1'])]),
      Code.InvalidArgument,
      /^desired\.endpoints\[1\]\.dnsName: label "bad name" contains the character " "/,
    );
    await expectRejected(
      planDesired([ep(`ok.${ZONE}`, 'A', ['192.0.2.1', 'not-an-ip'])]),
      Code.InvalidArgument,
      /^desired\.endpoints\[0\]\.targets\[1\]: "not-an-ip" is not an IPv4 address/,
    );
    await expectRejected(
      planDesired([ep(`t.${ZONE}`, 'A', ['192.0.2.1'], -5)]),
      Code.InvalidArgument,
      /^desired\.endpoints\[0\]\.ttl: the TTL must not be negative \(got -5\)$/,
    );
    await expectRejected(
      planDesired([], Policy.SYNC, ['other.test']),
      Code.InvalidArgument,
      /^desired\.zones\[0\]: "other\.test" is not a zone dnsplane manages$/,
    );
    await expectNothingDone();
  });

  it('the same checks on an inline plan of Apply: nothing applied', async () => {
    const before = room.sim.draftRecords(ZONE);
    await expectRejected(
      applyDesired(client(), [ep(`ok.${ZONE}`, 'A', ['not-an-ip'])]),
      Code.InvalidArgument,
      /(^|\.)desired\.endpoints\[0\]\.targets\[0\]: "not-an-ip" is not an IPv4 address/,
    );
    await expectNothingDone();
    expect(room.sim.draftRecords(ZONE)).toEqual(before);
  });
});

describe('the strict reader', () => {
  it('an enum value this server does not know: refused, binary and JSON alike, listing the known ones', async () => {
    for (const useBinaryFormat of [true, false]) {
      await expectRejected(
        client({ useBinaryFormat }).plan({ policy: 99 as Policy, input: { case: 'desired', value: { zones: [], endpoints: [] } } }),
        Code.InvalidArgument,
        /^policy: unknown value 99 \(known: 0 POLICY_UNSPECIFIED, 1 POLICY_SYNC, 2 POLICY_UPSERT_ONLY, 3 POLICY_CREATE_ONLY\)$/,
      );
    }
    await expectNothingDone();
  });

  it('a field this server does not know (a newer client): refused, not ignored', async () => {
    const req = create(PlanRequestSchema, { policy: Policy.SYNC, input: { case: 'desired', value: { zones: [ZONE], endpoints: [] } } });
    req.$unknown = [{ no: 99, wireType: WireType.Varint, data: new Uint8Array([1]) }];
    await expectRejected(client().plan(req), Code.InvalidArgument, /^PlanRequest: unknown field number 99 of PlanRequest \(a newer client\?/);
    await expectNothingDone();
  });
});
