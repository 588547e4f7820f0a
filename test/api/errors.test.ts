/**
 * Core errors as a caller meets them: api/errors.ts's toConnectError, the one mapping of every core
 * error to a Connect code, and the same errors thrown by real handlers reaching an in-memory client
 * (test/helpers/api-memory.ts) through errorInterceptor, the outermost interceptor.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { toConnectError } from '../../src/api/errors.js';
import {
  ApplyFailedError,
  InvalidInputError,
  LockTimeoutError,
  NotFoundError,
  OvhError,
  PermissionDeniedError,
  PlanNotApprovableError,
  ResourceExhaustedError,
  SecretsKeyError,
  ShuttingDownError,
  StalePlanError,
  ThresholdError,
  UnauthenticatedError,
  ZoneLockLostError,
} from '../../src/core/errors.js';
import { MIN_OWNED } from '../../src/core/plan/guard.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { ApplyResponseSchema, ApplyStatus, Policy, ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { inMemoryClient } from '../helpers/api-memory.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';
import { ep, expectCacheEqualsSimulator, expectRejected } from '../helpers/expect.js';
import { memoryLogger } from '../helpers/sim-server.js';
import { holdZoneLock } from '../helpers/zone-locks.js';
import { applyDesired } from '../helpers/zone-requests.js';

describe('toConnectError', () => {
  const ovh = (status: number, kind: ConstructorParameters<typeof OvhError>[3]) => new OvhError('POST', '/domain/zone/e.test/record', status, kind, 'said OVH');
  const cases: Array<[string, unknown, keyof typeof Code, RegExp]> = [
    ['bad input', new InvalidInputError('endpoints[0].dnsName', 'must be a name'), 'InvalidArgument', /^endpoints\[0\]\.dnsName: must be a name$/],
    ['no or a bad token', new UnauthenticatedError('invalid or disabled token'), 'Unauthenticated', /^invalid or disabled token$/],
    ['outside the grant', new PermissionDeniedError('endpoints[0].dnsName', 'outside'), 'PermissionDenied', /^endpoints\[0\]\.dnsName: outside$/],
    ['missing', new NotFoundError('plan', '7'), 'NotFound', /^plan "7" not found$/],
    ['a stale plan', new StalePlanError('the zone moved'), 'FailedPrecondition', /^the zone moved$/],
    ['a plan that cannot be approved', new PlanNotApprovableError('not pending'), 'FailedPrecondition', /^not pending$/],
    ['the zone lock busy', new LockTimeoutError('e.test', 500), 'Aborted', /^zone "e\.test": lock not acquired within 500 ms/],
    ['over a bound', new ResourceExhaustedError('too many plans at once'), 'ResourceExhausted', /^too many plans at once$/],
    ['an apply failed, OVH unavailable', new ApplyFailedError('OVH down', 'e.test', true), 'Unavailable', /^OVH down$/],
    ['an apply failed, the zone changed', new ApplyFailedError('changed outside', 'e.test', false), 'FailedPrecondition', /^changed outside$/],
    ['shutting down', new ShuttingDownError('stopping'), 'Unavailable', /^stopping$/],
    ['no secrets key', new SecretsKeyError('no DNSPLANE_SECRETS_KEY'), 'FailedPrecondition', /^no DNSPLANE_SECRETS_KEY$/],
    [
      'the database gone (SQLSTATE 57P01)',
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      'Unavailable',
      /^database unavailable, retry later: terminating connection/,
    ],
    [
      'the zone lock lost with its session',
      new ZoneLockLostError('e.test', 'the connection ended'),
      'Unavailable',
      /^database unavailable, retry later: zone "e\.test": the zone lock was lost/,
    ],
    ['OVH rate limited', ovh(429, 'rate_limited'), 'Unavailable', /^OVH POST \/domain\/zone\/e\.test\/record failed: HTTP 429 \(said OVH\)$/],
    ['OVH: no such zone', ovh(404, 'not_found'), 'FailedPrecondition', /HTTP 404/],
    ["OVH refusing dnsplane's credentials", ovh(403, 'auth'), 'Internal', /^OVH rejected dnsplane's credentials: OVH POST/],
    ['OVH refusing the request', ovh(400, 'bad_request'), 'Internal', /HTTP 400 \(said OVH\)$/],
    ['anything else: a bug', new TypeError("Cannot read properties of undefined (reading 'secret')"), 'Internal', /^internal error$/],
  ];
  it.each(cases)('%s', (_what, error, code, message) => {
    const ce = toConnectError(error);
    expect(Code[ce.code]).toBe(code);
    expect(ce.rawMessage).toMatch(message);
  });

  it('the change threshold: FailedPrecondition with the refusal and its zone in the metadata (the webhook sidecar tells it from a stale plan)', () => {
    const ce = toConnectError(new ThresholdError('over 30 %', 'e.test', { owned: 10, updates: 0, deletes: 5, maxPercent: 30 }));
    expect([Code[ce.code], ce.rawMessage, ce.metadata.get('dnsplane-refusal'), ce.metadata.get('dnsplane-refusal-zone')]).toEqual([
      'FailedPrecondition',
      'over 30 %',
      'change-threshold',
      'e.test',
    ]);
  });

  it('a Connect error passes unchanged', () => {
    const e = new ConnectError('as is', Code.DeadlineExceeded);
    expect(toConnectError(e)).toBe(e);
  });
});

describe('errors thrown by the handlers, as the client sees them', () => {
  const ZONE = 'errors.test';
  const logs = memoryLogger('debug');
  let room: ApplyRoom;
  let admin: string;
  const zone = (token = room.tokens['alice']) => inMemoryClient(room.ctx, ZoneService, token);

  beforeAll(async () => {
    room = await applyRoom({
      zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] },
      tenants: ['alice'],
      settings: { lockTimeoutMs: 300 },
    });
    room.ctx.log = logs.log;
    admin = (await createTenant(room.db.pool, { name: 'root', zones: [], admin: true })).token;
  });
  afterAll(async () => {
    await room?.close();
  });
  beforeEach(() => {
    room.sim.faults.clear();
    room.sim.clearCalls();
  });

  it('NotFound: an apply or a plan that does not exist, named', async () => {
    await expectRejected(zone().getApply({ journalId: '999999' }), Code.NotFound, /^no apply with journal id 999999 among tenant "alice"'s$/);
    await expectRejected(inMemoryClient(room.ctx, AdminService, admin).getPlan({ id: '00000000-0000-0000-0000-000000000000' }), Code.NotFound, /plan/);
    expect(room.calls()).toEqual([]);
  });

  it('FailedPrecondition: a stored plan whose record set moved since, and nothing sent', async () => {
    const planned = await zone().plan({
      policy: Policy.UPSERT_ONLY,
      input: { case: 'desired', value: { zones: [], endpoints: [ep(`stale.${ZONE}`, 'A', ['192.0.2.7'])] } },
    });
    await applyDesired(zone(), [ep(`stale.${ZONE}`, 'A', ['192.0.2.8'])]);
    room.sim.clearCalls();
    await expectRejected(
      zone().apply({ source: { case: 'planId', value: planned.plan!.id } }),
      Code.FailedPrecondition,
      /^the record sets or ownership the plan touches in zone errors\.test changed since it was made \(generation \d+ -> \d+\); nothing was sent, make a new plan$/,
    );
    expect(room.calls()).toEqual([]);
  });

  it("Aborted: the zone's lock held past DNSPLANE_LOCK_TIMEOUT, nothing sent", async () => {
    const lock = await holdZoneLock(room.db.pool, ZONE);
    try {
      await expectRejected(applyDesired(zone(), [ep(`locked.${ZONE}`, 'A', ['192.0.2.9'])]), Code.Aborted, /lock not acquired within 300 ms/);
    } finally {
      await lock.release();
    }
    expect(room.calls()).toEqual([]);
  });

  it('OVH refusing a creation: FailedPrecondition, the whole answer in the error, the zone as it was', async () => {
    room.sim.faults.fail({
      method: 'POST',
      path: `/domain/zone/${ZONE}/record`,
      nth: 1,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'refused by the test' } },
    });
    const e = await expectRejected(applyDesired(zone(), [ep(`refused.${ZONE}`, 'A', ['192.0.2.10'])]), Code.FailedPrecondition, /refused by the test/);
    const [answer] = e.findDetails(ApplyResponseSchema);
    expect(answer!.zones.map((z) => [z.zone, ApplyStatus[z.status]])).toEqual([[ZONE, 'FAILED']]);
    expect(room.sim.draftRecords(ZONE).map((r) => r.subDomain)).not.toContain('refused');
    await expectCacheEqualsSimulator(room.db.pool, room.sim, ZONE);
  });

  it('over the change threshold: FailedPrecondition, the refusal and its zone in the response headers, nothing sent', async () => {
    // The guard counts from MIN_OWNED (10) record sets a tenant owns in the zone.
    await applyDesired(
      zone(),
      Array.from({ length: MIN_OWNED }, (_, i) => ep(`t${i}.${ZONE}`, 'A', [`192.0.2.${30 + i}`])),
    );
    room.sim.clearCalls();
    const settings = room.ctx.settings;
    room.ctx.settings = { ...settings, maxChangePercent: 30 };
    try {
      // SYNC of nothing deletes every record set alice owns here (these and the earlier tests'): over 30 %.
      const e = await expectRejected(
        applyDesired(zone(), [], Policy.SYNC, [ZONE]),
        Code.FailedPrecondition,
        /^change threshold: this apply would delete (\d+) of the \1 record sets tenant "alice" owns in zone errors\.test \(100%, over the limit of 30%\); nothing was sent\. If this is intended, apply again with force/,
      );
      expect([e.metadata.get('dnsplane-refusal'), e.metadata.get('dnsplane-refusal-zone')]).toEqual(['change-threshold', ZONE]);
    } finally {
      room.ctx.settings = settings;
    }
    expect(room.calls()).toEqual([]);
  });

  it('the database gone: Unavailable, retryable — from the first interceptor that touches it (the token check), mapped by the outermost one', async () => {
    // Nothing listens on port 1: every connection is refused (ECONNREFUSED), as when Postgres is down.
    const gone = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1 });
    gone.on('error', () => undefined);
    const client = inMemoryClient({ ...room.ctx, pool: gone }, ZoneService, room.tokens['alice']);
    try {
      await expectRejected(client.records({ zones: [ZONE] }), Code.Unavailable, /^database unavailable, retry later: .*ECONNREFUSED/);
    } finally {
      await gone.end();
    }
  });

  it('a bug: Internal "internal error" to the caller, the error itself only in the log', async () => {
    const since = logs.lines.length;
    // A context without its OVH client: what InvalidateZone's re-read throws is no core error.
    const broken = { ...room.ctx, ovh: undefined as unknown as typeof room.ctx.ovh };
    const e = await expectRejected(inMemoryClient(broken, AdminService, admin).invalidateZone({ zone: ZONE }), Code.Internal, /^internal error$/);
    expect(e.metadata.get('dnsplane-refusal')).toBeNull();
    const logged = logs.lines.slice(since).filter((l) => l['msg'] === 'rpc failed');
    expect(logged.map((l) => [l['level'], l['rpc']])).toEqual([[50, 'InvalidateZone']]);
    expect(JSON.stringify(logged[0]!['err'])).toMatch(/TypeError/);
  });

  it("a bug inside an apply: Internal to the caller, the zone's own error (not only the Connect error) in the log", async () => {
    const since = logs.lines.length;
    // A context without its OVH client: the apply's first operation throws a TypeError, which becomes the zone's error.
    const broken = { ...room.ctx, ovh: undefined as unknown as typeof room.ctx.ovh };
    await expectRejected(
      applyDesired(inMemoryClient(broken, ZoneService, room.tokens['alice']), [ep(`bug.${ZONE}`, 'A', ['192.0.2.11'])]),
      Code.Internal,
      /internal error/,
    );
    const logged = logs.lines.slice(since).filter((l) => l['msg'] === 'rpc failed' && l['rpc'] === 'Apply');
    expect(logged.length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(logged.map((l) => l['err']))).toMatch(/TypeError/);
    expect(room.calls()).toEqual([]);
  });
});
