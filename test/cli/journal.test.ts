/**
 * `dnsplane apply --wait` and `dnsplane journal show` against a real server whose prober asks the OVH
 * simulator's two authoritative servers (their lag set exactly): what a person reads, the exit codes a
 * pipeline acts on, and `--json` as the API answers it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create, toJsonString } from '@bufbuild/protobuf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applyCommand } from '../../src/cli/apply.js';
import { applyLines, journalCommand } from '../../src/cli/journal.js';
import { visibilityLines } from '../../src/cli/visibility.js';
import { GetApplyResponseSchema, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { capturedIo } from '../helpers/cli-io.js';
import { ep } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const ZONE = 'journal.test';
let h: Harness;
let alice: string;
let aliceFile: string;
let bobs: string;

const io = () => capturedIo({});
const server = () => ['--server', h.server.url, '--token-file', aliceFile];

async function planOf(name: string, target: string): Promise<string> {
  const res = await h
    .zoneClient(alice)
    .plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`${name}.${ZONE}`, 'A', [target])] } } });
  return res.plan!.id;
}

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  alice = await h.tenant('alice', [ZONE], { suffixes: [`a.${ZONE}`] });
  const bob = await h.tenant('bob', [ZONE], { suffixes: [`b.${ZONE}`] });
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-journal-cli-'));
  aliceFile = path.join(dir, 'alice.token');
  writeFileSync(aliceFile, alice);
  bobs = (
    await h.zoneClient(bob).apply({
      source: {
        case: 'plan',
        value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`x.b.${ZONE}`, 'A', ['192.0.2.99'])] } } },
      },
    })
  ).zones[0]!.journalId;
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => {
  h.sim.propagation.release();
  h.sim.propagation.setLag(0);
});

describe('dnsplane apply --wait', () => {
  it('exit 0 once visible: each server and when it first answered', async () => {
    h.sim.propagation.setLag(600, 'ns1.sim.test');
    const out = io();
    expect(await applyCommand.run([await planOf('www.a', '192.0.2.1'), '--wait', ...server()], out)).toBe(0);
    const id = /, journal (\d+)$/.exec(out.lines[1]!)![1]!;
    const now = await h.zoneClient(alice).getApply({ journalId: id });
    expect(out.lines.slice(-3)).toEqual(visibilityLines(now.visibility!, '    '));
    expect(out.lines.at(-3)).toMatch(/^ {4}visible on every authoritative server \d+\.\d s after publishing \(published .*Z, visible .*Z\)$/);
    expect(out.lines.slice(-2).every((l) => / answered \d+\.\d s after publishing \(/.test(l))).toBe(true);
  });

  it('exit 2 when the wait ends first: published, the server behind and on which name', async () => {
    h.sim.propagation.setLag('never', 'ns1.sim.test');
    const out = io();
    expect(await applyCommand.run([await planOf('late.a', '192.0.2.2'), '--wait', '--wait-timeout', '2s', ...server()], out)).toBe(2);
    expect(out.lines.at(-3)).toMatch(/^ {4}published .*Z; not yet visible on every authoritative server$/);
    expect(out.lines.some((l) => l.endsWith(`behind on late.a.${ZONE} A`))).toBe(true);
  });

  it('refuses --wait-timeout without --wait, and a bad duration, before calling', async () => {
    const out = io();
    expect(await applyCommand.run(['pl_x', '--wait-timeout', '5m', ...server()], out).catch((e: Error) => e.message)).toBe('--wait-timeout: goes with --wait');
    expect(await applyCommand.run(['pl_x', '--wait', '--wait-timeout', '2h', ...server()], out).catch((e: Error) => e.message)).toBe(
      '--wait-timeout: must be more than 0 and at most 1h, got "2h"',
    );
  });
});

describe('dnsplane journal show', () => {
  it('prints an apply and its visibility, as GetApply answers; --json is the message; --wait waits', async () => {
    h.sim.propagation.hold('ns1.sim.test');
    const journalId = (
      await h.zoneClient(alice).apply({
        source: {
          case: 'plan',
          value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`show.a.${ZONE}`, 'A', ['192.0.2.3'])] } } },
        },
      })
    ).zones[0]!.journalId;
    // dns1 seen answering; ns1 held: the state stays as it is until the release.
    await until('dns1 seen answering', async () =>
      (await h.zoneClient(alice).getApply({ journalId })).visibility!.servers.some((sv) => sv.firstAnsweredAt !== undefined),
    );
    const text = io();
    expect(await journalCommand.run(['show', journalId, ...server()], text)).toBe(2);
    const now = await h.zoneClient(alice).getApply({ journalId });
    expect(text.lines).toEqual(applyLines(now));
    expect(text.lines[0]).toBe(`Apply ${journalId}: zone ${ZONE}, tenant alice, inline (plan and apply in one call), done`);

    const json = io();
    expect(await journalCommand.run(['show', journalId, '--json', ...server()], json)).toBe(2);
    expect(json.text()).toBe(toJsonString(GetApplyResponseSchema, await h.zoneClient(alice).getApply({ journalId }), { prettySpaces: 2 }));

    const waited = io();
    const running = journalCommand.run(['show', journalId, '--wait', ...server()], waited);
    h.sim.propagation.release('ns1.sim.test');
    expect(await running).toBe(0);
    expect(waited.lines[2]).toMatch(/^ {2}visible on every authoritative server/);
  });

  it("another tenant's apply is not found; a bad id is refused", async () => {
    const out = io();
    await expect(journalCommand.run(['show', bobs, ...server()], out)).rejects.toThrow(new RegExp(`no apply with journal id ${bobs} among tenant "alice"'s`));
    await expect(journalCommand.run(['show', 'abc', ...server()], out)).rejects.toThrow('ID: exactly one journal id (a number) is required');
    await expect(journalCommand.run(['list', ...server()], out)).rejects.toThrow('subcommand: must be "show", "revert" or "prune", got "list"');
  });
});

describe('journal show: an apply another door made names the door and the key', () => {
  it('a DNS UPDATE, an OVH API refresh: their summary, not "inline"', () => {
    const line = (summary: string) =>
      applyLines(create(GetApplyResponseSchema, { journalId: '7', zone: 'example.test', tenant: 'demo', summary, state: 'done' }))[0];
    expect(line('DNS UPDATE signed by demo-acme.dnsplane.')).toBe('Apply 7: zone example.test, tenant demo, DNS UPDATE signed by demo-acme.dnsplane., done');
    expect(line('OVH API refresh by application key 0123abcd')).toBe(
      'Apply 7: zone example.test, tenant demo, OVH API refresh by application key 0123abcd, done',
    );
  });
});

describe('journal show: the OVH account of an apply', () => {
  it('is named when it is not the default one (the only one most installations have)', () => {
    const second = (account: string) =>
      applyLines(
        create(GetApplyResponseSchema, { journalId: '7', zone: 'example.test', tenant: 'demo', state: 'done', clientAddress: '192.0.2.9', account }),
      )[1];
    expect(second('bee')).toBe('  started —, finished —, from 192.0.2.9, OVH account bee');
    expect(second('default')).toBe('  started —, finished —, from 192.0.2.9');
    expect(second('')).toBe('  started —, finished —, from 192.0.2.9');
  });
});
