/**
 * render.ts on hand-made plans: shared sets, warnings, unowned conflicts, zones without changes.
 * (test/cli/plan.test.ts checks a real plan with every kind of change.)
 */
import { stripVTControlCharacters } from 'node:util';
import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { hasChanges, renderPlan } from '../../src/cli/render.js';
import {
  ChangeAction,
  ConflictSchema,
  EndpointSchema,
  OvhOperationSchema,
  PlanSchema,
  PlannedChangeSchema,
  Policy,
  ZonePlanSchema,
} from '../../src/gen/dnsplane/v1/zone_pb.js';

const shared = { 'dnsplane/shared': 'true' };
const ep = (dnsName: string, recordType: string, targets: string[], ttl: number, labels: Record<string, string> = {}) =>
  create(EndpointSchema, { dnsName, recordType, targets, ttl, labels });
const op = (method: string, path: string, body = '') => create(OvhOperationSchema, { method, path, body });

describe('renderPlan', () => {
  const put = op('PUT', '/domain/zone/example.com/record/7', '{"target":"198.51.100.3","ttl":60}');
  const plan = create(PlanSchema, {
    id: 'pl_1',
    tenant: 'bob',
    policy: Policy.UPSERT_ONLY,
    zones: [
      create(ZonePlanSchema, {
        zone: 'example.com',
        baseGeneration: 9n,
        changes: [
          create(PlannedChangeSchema, {
            action: ChangeAction.UPDATE,
            before: ep('www.example.com', 'A', ['198.51.100.2'], 60, shared),
            after: ep('www.example.com', 'A', ['198.51.100.3'], 60, shared),
            warnings: ["www.example.com A: TTL 30 raised to OVH's minimum of 60"],
            operations: [put],
          }),
        ],
        conflicts: [
          create(ConflictSchema, {
            action: ChangeAction.UPDATE,
            endpoint: ep('manual.example.com', 'TXT', ['a "quoted" text'], 0),
            owner: '',
            reason: 'exists in OVH without an owner; an admin must assign it',
          }),
        ],
        operations: [put, op('POST', '/domain/zone/example.com/refresh')],
      }),
      create(ZonePlanSchema, { zone: 'example.org', baseGeneration: 2n }),
    ],
  });

  it('marks shared slices, shows warnings and unowned conflicts, and zones with nothing to do', () => {
    expect(renderPlan(plan, { color: false })).toEqual([
      'Plan pl_1 for tenant "bob" (policy upsert-only)',
      '',
      'Zone example.com (generation 9):',
      '  ~ www.example.com A (shared set: your targets) ttl 60: 198.51.100.2 -> 198.51.100.3',
      "      warning: www.example.com A: TTL 30 raised to OVH's minimum of 60",
      '      PUT /domain/zone/example.com/record/7 {"target":"198.51.100.3","ttl":60}',
      '  ! manual.example.com TXT (update: "a \\"quoted\\" text"), no owner: exists in OVH without an owner; an admin must assign it',
      '  POST /domain/zone/example.com/refresh',
      '',
      'Zone example.org (generation 2): no changes',
      '',
      'Plan: 0 to create, 1 to update, 0 to delete, 1 conflict; 2 OVH calls.',
      'Apply it with: dnsplane apply pl_1',
    ]);
    expect(hasChanges(plan)).toBe(true);
  });

  it('an empty plan has nothing to apply', () => {
    const empty = create(PlanSchema, { id: 'pl_2', tenant: 'bob' });
    expect(renderPlan(empty, { color: true }).map((l) => stripVTControlCharacters(l))).toEqual([
      'Plan pl_2 for tenant "bob" (policy sync)',
      '',
      'No zone in this plan.',
      '',
      'Plan: 0 to create, 0 to update, 0 to delete, 0 conflicts; 0 OVH calls.',
      'Nothing to apply.',
    ]);
    expect(hasChanges(empty)).toBe(false);
  });
});

describe('text targets', () => {
  it('TXT and OVH’s SPF, DKIM, DMARC are shown quoted; the other types as they are', () => {
    const plan = create(PlanSchema, {
      id: 'pl_2',
      tenant: 'mail',
      policy: Policy.UPSERT_ONLY,
      zones: [
        create(ZonePlanSchema, {
          zone: 'example.com',
          changes: [
            create(PlannedChangeSchema, { action: ChangeAction.CREATE, after: ep('sel._domainkey.example.com', 'DKIM', ['v=DKIM1;p=abc'], 300) }),
            create(PlannedChangeSchema, {
              action: ChangeAction.CREATE,
              after: ep('naptr.example.com', 'NAPTR', ['100 10 "S" "SIP+D2U" "" _sip._udp.example.org'], 300),
            }),
          ],
        }),
      ],
    });
    const text = stripVTControlCharacters(renderPlan(plan, { color: false }).join('\n'));
    expect(text).toContain('"v=DKIM1;p=abc"');
    expect(text).toContain('100 10 "S" "SIP+D2U" "" _sip._udp.example.org');
    expect(text).not.toContain('"100 10');
  });
});
