/**
 * `dnsplane plan` and `dnsplane apply` against a real server (real Postgres, the OVH simulator):
 * the diff text for a plan with every kind of change, checked line by line; JSON output; --as for an
 * admin; colours only on a terminal; exit codes 0 / 2 / 1 from the real binary.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { create } from '@bufbuild/protobuf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applyCommand } from '../../src/cli/apply.js';
import type { CliIo } from '../../src/cli/command.js';
import { planCommand } from '../../src/cli/plan.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import { EndpointSchema, PlanRequestSchema, Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines } from '../helpers/expect.js';

const ZONE = 'example.com';
const run = promisify(execFile);
let h: Harness;
let dir: string;
let aliceTokenFile: string;
let adminTokenFile: string;
let desiredFile: string;

function io(opts: { tty?: boolean; env?: Record<string, string> } = {}): CliIo & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l = '') => void lines.push(l), err: (l) => void errors.push(l), env: opts.env ?? {}, isTty: opts.tty ?? false };
}

const calls = (): string[] => callLines(h.sim);

const idOf = (sub: string, type = 'A') => h.sim.draftRecords(ZONE).find((r) => r.subDomain === sub && r.fieldType === type)!.id;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-cli-'));
  const alice = await h.tenant('alice', [ZONE]);
  const bob = await h.tenant('bob', [ZONE]);
  const admin = await h.tenant('admin', [], { admin: true });
  aliceTokenFile = path.join(dir, 'alice.token');
  adminTokenFile = path.join(dir, 'admin.token');
  writeFileSync(aliceTokenFile, `${alice}\n`);
  writeFileSync(adminTokenFile, admin);
  const apply = (token: string, endpoints: Array<[string, string, string[], number]>) =>
    h.zoneClient(token).apply({
      source: {
        case: 'plan',
        value: create(PlanRequestSchema, {
          policy: Policy.UPSERT_ONLY,
          input: {
            case: 'desired',
            value: { endpoints: endpoints.map(([n, t, targets, ttl]) => create(EndpointSchema, { dnsName: `${n}.${ZONE}`, recordType: t, targets, ttl })) },
          },
        }),
      },
    });
  await apply(alice, [
    ['www', 'A', ['192.0.2.1'], 300],
    ['old', 'TXT', ['hello world'], 0],
  ]);
  await apply(bob, [['taken', 'A', ['198.51.100.1'], 300]]);

  desiredFile = path.join(dir, 'desired.yaml');
  writeFileSync(
    desiredFile,
    `# alice's desired state
zones: [${ZONE}]
endpoints:
  - dnsName: new.${ZONE}
    recordType: A
    targets: [192.0.2.21, 192.0.2.20]
    ttl: 300
  - dns_name: www.${ZONE}.
    type: a
    targets: 192.0.2.9
    recordTTL: 600
  - dnsName: taken.${ZONE}
    recordType: A
    targets: [192.0.2.30]
    ttl: 300
  # old.${ZONE} TXT is gone from the desired state: policy sync deletes it
`,
  );
});

afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => h.sim.clearCalls());

describe('dnsplane plan', () => {
  it('prints every kind of change with its OVH calls, and the conflict with its owner', async () => {
    const out = io();
    const code = await planCommand.run(['-f', desiredFile, '--server', h.server.url, '--token-file', aliceTokenFile], out);
    expect(code).toBe(2);
    expect(calls()).toEqual([]);
    const id = /^Plan (pl_[0-9a-f]+) /.exec(out.lines[0]!)![1]!;
    const expires = /expires (\S+)\)$/.exec(out.lines[0]!)![1]!;
    expect(new Date(expires).getTime()).toBeGreaterThan(Date.now());
    const generation = (await h.zoneClient(readFileSync(aliceTokenFile, 'utf8').trim()).listZones({})).zones[0]!.generation;
    expect(out.lines).toEqual([
      `Plan ${id} for tenant "alice" (policy sync; expires ${expires})`,
      '',
      `Zone ${ZONE} (generation ${generation}):`,
      `  + new.${ZONE} A ttl 300: 192.0.2.20, 192.0.2.21`,
      `      POST /domain/zone/${ZONE}/record {"fieldType":"A","subDomain":"new","target":"192.0.2.20","ttl":300}`,
      `      POST /domain/zone/${ZONE}/record {"fieldType":"A","subDomain":"new","target":"192.0.2.21","ttl":300}`,
      `  - old.${ZONE} TXT ttl default: "hello world"`,
      `      DELETE /domain/zone/${ZONE}/record/${idOf('old', 'TXT')}`,
      `  ~ www.${ZONE} A ttl 300 -> 600: 192.0.2.1 -> 192.0.2.9`,
      `      PUT /domain/zone/${ZONE}/record/${idOf('www')} {"target":"192.0.2.9","ttl":600}`,
      `  ! taken.${ZONE} A (update: 192.0.2.30), owner "bob": taken.${ZONE} A is owned by tenant "bob"`,
      `  POST /domain/zone/${ZONE}/refresh`,
      '',
      'Plan: 1 to create, 1 to update, 1 to delete, 1 conflict; 5 OVH calls.',
      `Apply it with: dnsplane apply ${id}`,
    ]);
    expect(out.lines.join('\n')).not.toContain('\u001b[');
  });

  it('colours only on a terminal, and never with NO_COLOR', async () => {
    const tty = io({ tty: true });
    await planCommand.run(['-f', desiredFile, '--server', h.server.url, '--token-file', aliceTokenFile], tty);
    expect(tty.lines.find((l) => l.includes(`new.${ZONE}`))).toBe(`\u001b[32m  + new.${ZONE} A ttl 300: 192.0.2.20, 192.0.2.21\u001b[0m`);
    // biome-ignore-start lint/suspicious/noControlCharactersInRegex: the ANSI colour codes (ESC [) are what is checked.
    expect(tty.lines.find((l) => l.includes('  ~ '))).toMatch(/^\u001b\[33m/);
    expect(tty.lines.find((l) => l.includes('  - '))).toMatch(/^\u001b\[31m/);
    expect(tty.lines.find((l) => l.includes('  ! '))).toMatch(/^\u001b\[35m/);
    // biome-ignore-end lint/suspicious/noControlCharactersInRegex: the ANSI colour codes (ESC [) are what is checked.
    const noColor = io({ tty: true, env: { NO_COLOR: '1' } });
    await planCommand.run(['-f', desiredFile, '--server', h.server.url, '--token-file', aliceTokenFile], noColor);
    expect(noColor.lines.join('\n')).not.toContain('\u001b[');
  });

  it('--output json prints the Plan message; an admin plans for a tenant with --as, a dry run', async () => {
    const out = io({ env: { DNSPLANE_TOKEN: readFileSync(adminTokenFile, 'utf8') } });
    const code = await planCommand.run(['-f', desiredFile, '--as', 'alice', '--server', h.server.url, '--output', 'json'], out);
    expect(code).toBe(2);
    const plan = JSON.parse(out.lines.join('\n')) as {
      id: string;
      tenant: string;
      zones: Array<{ changes: Array<{ action: string; operations?: unknown[] }>; conflicts: unknown[] }>;
    };
    expect(plan.tenant).toBe('alice');
    expect(plan.zones[0]!.changes.map((c) => `${c.action} ${c.operations?.length ?? 0}`)).toEqual([
      'CHANGE_ACTION_CREATE 2',
      'CHANGE_ACTION_DELETE 1',
      'CHANGE_ACTION_UPDATE 1',
    ]);
    expect(plan.zones[0]!.conflicts).toHaveLength(1);
    expect(calls()).toEqual([]);
  });

  it('refuses a bad file naming the field and the rule', async () => {
    const bad = path.join(dir, 'bad.yaml');
    const cases: Array<[string, string]> = [
      [`- dnsName: x.${ZONE}\n  recordType: A\n  targets: [192.0.2.1]\n  tll: 300\n`, `${bad}: [0].tll: unknown key`],
      [`- dnsName: x.${ZONE}\n  recordType: A\n  targets: {a: 1}\n`, `${bad}: [0].targets: must be a list of strings`],
      [
        `- dnsName: x.${ZONE}\n  recordType: A\n  targets: [192.0.2.1]\n  labels: {dnsplane/shared: true}\n`,
        `${bad}: [0].labels: must be a mapping of strings to strings (quote "true")`,
      ],
      [`endpoints: []\npolicy: merge\n`, `${bad}: policy: must be one of sync, upsert-only, create-only`],
      [`just text\n`, `${bad}: must hold a list of endpoints or a mapping with "endpoints"`],
    ];
    for (const [text, message] of cases) {
      writeFileSync(bad, text);
      const err = await planCommand.run(['-f', bad, '--server', h.server.url, '--token-file', aliceTokenFile], io()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as Error).message).toContain(message);
    }
    expect(calls()).toEqual([]);
  });
});

describe('dnsplane apply', () => {
  it('applies a stored plan and prints the calls made; the same plan again is no change', async () => {
    const planned = io();
    await planCommand.run(['-f', desiredFile, '--server', h.server.url, '--token-file', aliceTokenFile], planned);
    const id = /^Plan (pl_[0-9a-f]+) /.exec(planned.lines[0]!)![1]!;
    h.sim.clearCalls();
    const out = io();
    expect(await applyCommand.run([id, '--server', h.server.url, '--token-file', aliceTokenFile], out)).toBe(0);
    expect(calls()).toEqual([
      expect.stringMatching(/^DELETE /),
      expect.stringMatching(/^PUT /),
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    expect(out.lines[0]).toBe(`Plan ${id}:`);
    expect(out.lines[1]).toMatch(new RegExp(`^  ${ZONE}: applied, generation \\d+, 5 OVH calls, journal \\d+$`));
    expect(out.lines.slice(2, 7).map((l) => l.trim().replace(/\/record\/\d+/, '/record/ID'))).toEqual([
      `DELETE /domain/zone/${ZONE}/record/ID -> 200`,
      `PUT /domain/zone/${ZONE}/record/ID -> 200`,
      `POST /domain/zone/${ZONE}/record -> 200`,
      `POST /domain/zone/${ZONE}/record -> 200`,
      `POST /domain/zone/${ZONE}/refresh -> 204`,
    ]);
    expect(out.lines[7]).toMatch(/! taken.example.com A, owner "bob"/);

    const again = io();
    expect(await planCommand.run(['-f', desiredFile, '--server', h.server.url, '--token-file', aliceTokenFile], again)).toBe(0);
    expect(again.lines.slice(-2)).toEqual(['Plan: 0 to create, 0 to update, 0 to delete, 1 conflict; 0 OVH calls.', 'Nothing to apply.']);
  });
});

describe('exit codes of the real binary', () => {
  const bin = path.resolve('bin/dnsplane-dev.js');
  const exec = async (args: string[]) =>
    run(process.execPath, [bin, ...args], { env: { ...process.env, NO_COLOR: '1' } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it('0 for no changes, 2 for changes, 1 for errors', async () => {
    const none = await exec(['plan', '-f', desiredFile, '--server', h.server.url, '--token-file', aliceTokenFile]);
    expect([none.code, none.stdout.trim().split('\n').at(-1)]).toEqual([0, 'Nothing to apply.']);

    const changed = path.join(dir, 'changed.json');
    writeFileSync(changed, JSON.stringify([{ dnsName: `json.${ZONE}`, recordType: 'TXT', targets: ['from json'], ttl: 60 }]));
    const two = await exec(['plan', '-f', changed, '--policy', 'upsert-only', '--server', h.server.url, '--token-file', aliceTokenFile]);
    expect(two.code).toBe(2);
    expect(two.stdout).toContain(`  + json.${ZONE} TXT ttl 60: "from json"`);

    const bad = await exec(['plan', '-f', path.join(dir, 'missing.yaml'), '--server', h.server.url, '--token-file', aliceTokenFile]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--file: cannot read/);
    const denied = await exec(['plan', '-f', changed, '--as', 'alice', '--server', h.server.url, '--token-file', aliceTokenFile]);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/permission_denied.*admin scope/);
    expect(calls()).toEqual([]);
  });
});
