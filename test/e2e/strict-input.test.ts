/**
 * Strict input on every RPC (issue: a typo'd policy read as SYNC deleted a tenant's records): unknown
 * JSON keys, unknown enum names and numbers, unknown binary fields, a desired state without a policy,
 * and strings Postgres cannot store are InvalidArgument naming the field — and nothing reaches OVH.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PlanRequestSchema, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { Writable } from 'node:stream';
import pino from 'pino';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';

const ZONE = 'example.com';
let h: Harness;
let alice: string;
let admin: string;
/** The server's log, line by line (debug level: rejected RPCs are logged at debug). */
const logLines: string[] = [];
const logger = pino(
  { level: 'debug' },
  new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  }),
);

/** A raw Connect unary call with a JSON body, as curl would send it. */
async function rawJson(
  service: string,
  method: string,
  body: string,
  token = alice,
): Promise<{ status: number; json: { code?: string; message?: string } & Record<string, unknown> }> {
  const res = await fetch(`${h.server.url}/dnsplane.v1.${service}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body,
  });
  return { status: res.status, json: (await res.json()) as { code?: string; message?: string } };
}

const five = ['a', 'b', 'c', 'd', 'e'];

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [{ subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.', ttl: 0 }] }, logger });
  alice = await h.tenant('alice', [ZONE]);
  admin = await h.tenant('root', [], { admin: true });
  // Five record sets alice owns: a typo that became SYNC would delete four of them.
  await h.zoneClient(alice).apply({
    source: {
      case: 'plan',
      value: {
        policy: Policy.UPSERT_ONLY,
        input: { case: 'desired', value: { zones: [], endpoints: five.map((n) => ep(`${n}.${ZONE}`, 'A', ['192.0.2.1'])) } },
      },
    },
  });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('JSON', () => {
  const desired = (extra: string, endpoint = `{"dnsName":"a.${ZONE}","recordType":"A","targets":["192.0.2.1"]}`) =>
    `{${extra}"desired":{"endpoints":[${endpoint}]}}`;

  it.each([
    [
      'a lowercase policy',
      desired('"policy":"upsert-only",'),
      /^policy: unknown value "upsert-only" \(known: POLICY_SYNC, POLICY_UPSERT_ONLY, POLICY_CREATE_ONLY\)/,
    ],
    ['a misspelt policy name', desired('"policy":"POLICY_UPSERTONLY",'), /^policy: unknown value "POLICY_UPSERTONLY"/],
    ['a policy number the schema does not know', desired('"policy":7,'), /^policy: unknown value 7/],
    [
      'a misspelt field of an endpoint',
      desired('"policy":"POLICY_UPSERT_ONLY",', `{"dnsName":"a.${ZONE}","recordType":"A","targets":["192.0.2.1"],"tll":60}`),
      /^desired\.endpoints\[0\]\.tll: unknown field of Endpoint \(known: dnsName, recordType, targets, ttl/,
    ],
    [
      'a misspelt oneof member',
      '{"policy":"POLICY_SYNC","desird":{"endpoints":[]}}',
      /^desird: unknown field of PlanRequest \(known: desired, changes, policy/,
    ],
    [
      'a desired state without a policy',
      desired(''),
      /^policy: is required with a desired state: POLICY_SYNC .* DELETES .*POLICY_UPSERT_ONLY creates and updates and never deletes/,
    ],
  ])('Plan with %s: InvalidArgument naming the field, no OVH call, nothing deleted', async (_what, body, message) => {
    const { status, json } = await rawJson('ZoneService', 'Plan', body);
    expect(status).toBe(400);
    expect(json.code).toBe('invalid_argument');
    expect(json.message).toMatch(message);
    const applied = await rawJson('ZoneService', 'Apply', `{"plan":${body}}`);
    expect(applied.json.code).toBe('invalid_argument');
    expect(callLines(h.sim)).toEqual([]);
    const records = await h.zoneClient(alice).records({});
    expect(records.zones[0]!.endpoints.map((e) => e.dnsName).sort()).toEqual(five.map((n) => `${n}.${ZONE}`));
  });

  it('the unknown field is found at any depth and on every service (AdminService.PlanAs)', async () => {
    const { json } = await rawJson(
      'AdminService',
      'PlanAs',
      `{"tenant":"alice","request":{"policy":"POLICY_SYNC","desired":{"endpoints":[],"zone":["${ZONE}"]}}}`,
      admin,
    );
    expect(json.code).toBe('invalid_argument');
    expect(json.message).toMatch(/^request\.desired\.zone: unknown field of DesiredState/);
    const listed = await rawJson('AdminService', 'ListJournal', '{"limt":5}', admin);
    expect(listed.json.message).toMatch(/^limt: unknown field of ListJournalRequest \(known: zone, tenant, limit, beforeId, state\)/);
  });

  it('proto field names are accepted as well as JSON names, and a good request works', async () => {
    const { status, json } = await rawJson(
      'ZoneService',
      'Plan',
      `{"policy":"POLICY_UPSERT_ONLY","desired":{"endpoints":[{"dns_name":"a.${ZONE}","record_type":"A","targets":["192.0.2.1"]}]}}`,
    );
    expect(status).toBe(200);
    expect(json['plan']).toBeDefined();
  });
});

describe('binary', () => {
  it('an unknown field from a newer client is refused with its number, not ignored', async () => {
    const req = create(PlanRequestSchema, {
      policy: Policy.UPSERT_ONLY,
      input: { case: 'desired', value: { zones: [], endpoints: [ep(`a.${ZONE}`, 'A', ['192.0.2.1'])] } },
    });
    // Field 99, varint 1: what a future `bool something = 99` set to true looks like on the wire.
    const bytes = new Uint8Array([...toBinary(PlanRequestSchema, req), 0x98, 0x06, 0x01]);
    const res = await fetch(`${h.server.url}/dnsplane.v1.ZoneService/Plan`, {
      method: 'POST',
      headers: { 'content-type': 'application/proto', authorization: `Bearer ${alice}` },
      body: bytes,
    });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { code: string; message: string };
    expect(json.code).toBe('invalid_argument');
    expect(json.message).toMatch(/unknown field number 99 of PlanRequest/);
  });

  it('gRPC: an unknown policy number and a policy-less desired state are InvalidArgument', async () => {
    const grpc = h.zoneClient(alice, 'grpc');
    await expectRejected(
      grpc.plan({ policy: 9 as Policy, input: { case: 'desired', value: { zones: [], endpoints: [ep(`a.${ZONE}`, 'A', ['192.0.2.1'])] } } }),
      Code.InvalidArgument,
      /^policy: unknown value 9/,
    );
    await expectRejected(
      grpc.plan({ input: { case: 'desired', value: { zones: [], endpoints: [ep(`a.${ZONE}`, 'A', ['192.0.2.1'])] } } }),
      Code.InvalidArgument,
      /^policy: is required with a desired state/,
    );
    expect(callLines(h.sim)).toEqual([]);
  });
});

describe('input Postgres cannot store', () => {
  it.each([
    ['NUL in a label value', { dnsName: `a.${ZONE}`, labels: { note: 'x\u0000y' } }, /^desired\.endpoints\[0\]\.labels\["note"\]: contains the NUL character/],
    ['NUL in a label key', { dnsName: `a.${ZONE}`, labels: { 'n\u0000': 'x' } }, /^desired\.endpoints\[0\]\.labels key "n\\u0000": contains the NUL character/],
    [
      'NUL in a TXT target',
      { dnsName: `a.${ZONE}`, recordType: 'TXT', targets: ['a\u0000b'] },
      /^desired\.endpoints\[0\]\.targets\[0\]: contains the NUL character/,
    ],
  ])('%s: InvalidArgument on Plan (Connect and gRPC) and on PlanAs', async (_what, e, message) => {
    const endpoint = { ...ep(`a.${ZONE}`, 'A', ['192.0.2.1']), ...e };
    const req = { policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [], endpoints: [endpoint] } } };
    await expectRejected(h.zoneClient(alice).plan(req), Code.InvalidArgument, message);
    await expectRejected(h.zoneClient(alice, 'grpc').plan(req), Code.InvalidArgument, message);
    const { AdminService } = await import('../../src/gen/dnsplane/v1/admin_pb.js');
    await expectRejected(
      h.client(AdminService, admin).planAs({ tenant: 'alice', request: req }),
      Code.InvalidArgument,
      new RegExp(`^request\\.${message.source.slice(1)}`),
    );
    expect(callLines(h.sim)).toEqual([]);
  });

  it('a lone surrogate (only JSON can carry one, as \\ud800): InvalidArgument naming the field', async () => {
    const { status, json } = await rawJson(
      'ZoneService',
      'Plan',
      `{"policy":"POLICY_UPSERT_ONLY","desired":{"endpoints":[{"dnsName":"a.${ZONE}","recordType":"A","targets":["192.0.2.1"],"labels":{"note":"\\ud800"}}]}}`,
    );
    expect(status).toBe(400);
    expect(json.message).toMatch(/^desired\.endpoints\[0\]\.labels\["note"\]: contains a lone UTF-16 surrogate/);
    expect(callLines(h.sim)).toEqual([]);
  });
});

it('a rejected RPC is logged with one msg (the reason has its own key)', async () => {
  await expectRejected(
    h.zoneClient(alice).plan({ input: { case: 'desired', value: { zones: [], endpoints: [ep(`a.${ZONE}`, 'A', ['192.0.2.1'])] } } }),
    Code.InvalidArgument,
    /^policy:/,
  );
  const rejected = logLines.filter((l) => l.includes('"rpc rejected"'));
  expect(rejected.length).toBeGreaterThan(0);
  for (const line of logLines) expect(line.match(/"msg":/g)?.length ?? 0, line).toBe(1);
  const last = JSON.parse(rejected.at(-1)!) as Record<string, unknown>;
  expect(last).toMatchObject({ msg: 'rpc rejected', rpc: 'Plan', code: 'InvalidArgument' });
  expect(last['reason']).toMatch(/^policy: is required/);
});
