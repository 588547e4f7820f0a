/**
 * `dnsplane nsm publish|unpublish`: the command function with a fake CliIo, against a real server
 * (startHarness: real Postgres, the OVH simulator). Output checked as text; OVH calls exact.
 */
import { Resolver } from 'node:dns/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { nsmCommand, parseHostPort } from '../../src/cli/nsm.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines } from '../helpers/expect.js';

const ZONE = 'example.com';
const D = `c1.nsm.${ZONE}`;
const RECORD = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;

let h: Harness;
let token: string;
let other: string;

interface FakeIo extends CliIo {
  lines: string[];
  errors: string[];
}

function fakeIo(env: Record<string, string | undefined>): FakeIo {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, env, isTty: false, out: (l = '') => lines.push(l), err: (l) => errors.push(l) };
}

async function run(args: string[], tok = token): Promise<{ code: number; out: string[] }> {
  const io = fakeIo({ DNSPLANE_TOKEN: tok, DNSPLANE_SERVER: h.server.url });
  const code = await nsmCommand.run(args, io);
  expect(io.errors).toEqual([]);
  return { code, out: io.lines };
}

async function rejected(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('the command should have failed');
    },
    (e: unknown) => e,
  );
}

const calls = (): string[] => callLines(h.sim);

function id(subDomain: string, fieldType: string): string {
  return String(h.sim.draftRecords(ZONE).find((r) => r.subDomain === subDomain && r.fieldType === fieldType)!.id);
}

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [{ subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.', ttl: 0 }] } });
  token = await h.tenant('c1', [ZONE]);
  other = await h.tenant('c2', [ZONE]);
  await h.zoneClient(token).records({ zones: [ZONE] }); // first sync, so the calls below are the command's
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('dnsplane nsm publish / unpublish', () => {
  it('publishes an interdomain cluster and prints the changes, the OVH calls and what NSM resolves', async () => {
    const { code, out } = await run([
      'publish',
      '--domain',
      D,
      '--registry',
      '192.0.2.1:5002',
      '--registry',
      '[2001:db8::1]:5002',
      '--nsmgr-proxy',
      '192.0.2.2:5004',
      '--ttl',
      '300',
    ]);
    expect(code).toBe(0);
    expect(calls()).toEqual([...Array(5).fill(`POST ${RECORD}`), `POST ${REFRESH}`]);
    const sub = (s: string) => `${s}.nsm-system.c1.nsm`;
    expect(out).toEqual([
      `published NSM domain ${D} (zone ${ZONE}): 5 change(s), 6 OVH call(s), generation ${out[0]!.match(/generation (\d+)$/)![1]}`,
      `  + nsmgr-proxy.nsm-system.${D} A 192.0.2.2`,
      `  + nsmgr-proxy.nsm-system.${D} SRV 0 100 5004 nsmgr-proxy.nsm-system.${D}`,
      `  + registry.nsm-system.${D} A 192.0.2.1`,
      `  + registry.nsm-system.${D} AAAA 2001:db8::1`,
      `  + registry.nsm-system.${D} SRV 0 100 5002 registry.nsm-system.${D}`,
      'OVH calls:',
      // DELETE, PUT, POST order; within POSTs the order of the changes.
      `  POST ${RECORD} {"fieldType":"A","subDomain":"${sub('nsmgr-proxy')}","target":"192.0.2.2","ttl":300}`,
      `  POST ${RECORD} {"fieldType":"SRV","subDomain":"${sub('nsmgr-proxy')}","target":"0 100 5004 nsmgr-proxy.nsm-system.${D}.","ttl":300}`,
      `  POST ${RECORD} {"fieldType":"A","subDomain":"${sub('registry')}","target":"192.0.2.1","ttl":300}`,
      `  POST ${RECORD} {"fieldType":"AAAA","subDomain":"${sub('registry')}","target":"2001:db8::1","ttl":300}`,
      `  POST ${RECORD} {"fieldType":"SRV","subDomain":"${sub('registry')}","target":"0 100 5002 registry.nsm-system.${D}.","ttl":300}`,
      `  POST ${REFRESH}`,
      'NSM resolves:',
      `  registry.nsm-system.${D} -> tcp://192.0.2.1:5002, tcp://[2001:db8::1]:5002`,
      `  nsmgr-proxy.nsm-system.${D} -> tcp://192.0.2.2:5004`,
    ]);
    const resolver = new Resolver();
    resolver.setServers([`127.0.0.1:${h.sim.dnsPort}`]);
    expect(await resolver.resolveSrv(`registry.nsm-system.${D}`)).toEqual([{ name: `registry.nsm-system.${D}`, port: 5002, priority: 0, weight: 100 }]);
    expect(await resolver.resolve6(`registry.nsm-system.${D}`)).toEqual(['2001:db8::1']);
  });

  it('says so when nothing changes, and sends nothing', async () => {
    const { out } = await run([
      'publish',
      '--domain',
      D,
      '--registry',
      '[2001:db8::1]:5002',
      '--registry',
      '192.0.2.1:5002',
      '--nsmgr-proxy',
      '192.0.2.2:5004',
      '--ttl',
      '300',
    ]);
    expect(calls()).toEqual([]);
    expect(out[0]).toBe(`NSM domain ${D} (zone ${ZONE}) is already published as asked: no change, no OVH call`);
    expect(out.slice(1)).toEqual([
      'NSM resolves:',
      `  registry.nsm-system.${D} -> tcp://192.0.2.1:5002, tcp://[2001:db8::1]:5002`,
      `  nsmgr-proxy.nsm-system.${D} -> tcp://192.0.2.2:5004`,
    ]);
  });

  it('prints an address change as ~ old -> new with its one PUT', async () => {
    const rid = id('registry.nsm-system.c1.nsm', 'A');
    const { out } = await run([
      'publish',
      '--domain',
      D,
      '--registry',
      '192.0.2.9:5002',
      '--registry',
      '[2001:db8::1]:5002',
      '--nsmgr-proxy',
      '192.0.2.2:5004',
      '--ttl',
      '300',
    ]);
    expect(calls()).toEqual([`PUT ${RECORD}/${rid}`, `POST ${REFRESH}`]);
    expect(out.slice(1, 5)).toEqual([
      `  ~ registry.nsm-system.${D} A 192.0.2.1 -> 192.0.2.9`,
      'OVH calls:',
      `  PUT ${RECORD}/${rid} {"target":"192.0.2.9","ttl":300}`,
      `  POST ${REFRESH}`,
    ]);
  });

  it('--wait: answers once both authoritative servers answer the records (exit 0), or exit 2 when the wait ends first', async () => {
    const W = `w.nsm.${ZONE}`;
    h.sim.propagation.setLag(300, 'ns1.sim.test');
    try {
      const seen = await run(['publish', '--domain', W, '--registry', '192.0.2.40:5002', '--nsmgr-proxy', '192.0.2.41:5004', '--wait']);
      expect(seen.code).toBe(0);
      const at = seen.out.indexOf('NSM resolves:');
      expect(seen.out[at - 3]).toMatch(/^  visible on every authoritative server \d+\.\d s after publishing/);
      expect(seen.out.slice(at - 2, at).every((l) => / answered \d+\.\d s after publishing/.test(l))).toBe(true);
      h.sim.propagation.setLag('never', 'ns1.sim.test');
      const late = await run([
        'publish',
        '--domain',
        W,
        '--registry',
        '192.0.2.42:5002',
        '--nsmgr-proxy',
        '192.0.2.41:5004',
        '--wait',
        '--wait-timeout',
        '1500ms',
      ]);
      expect(late.code).toBe(2);
      expect(late.out.some((l) => /^  published .*Z; not yet visible on every authoritative server$/.test(l))).toBe(true);
      expect(late.out.some((l) => l.endsWith(`behind on registry.nsm-system.${W} A`))).toBe(true);
    } finally {
      h.sim.propagation.setLag(0);
    }
  });

  it('--floating publishes only the registry (and address-only services): nsmgr-proxy goes', async () => {
    const { out } = await run([
      'publish',
      '--domain',
      D,
      '--floating',
      '--registry',
      '192.0.2.9:5002',
      '--registry',
      '[2001:db8::1]:5002',
      '--service',
      'vl3-ipam=192.0.2.7',
      '--ttl',
      '300',
    ]);
    const c = calls();
    expect(c.filter((x) => x.startsWith('DELETE '))).toHaveLength(2);
    expect(c.filter((x) => !x.startsWith('DELETE '))).toEqual([`POST ${RECORD}`, `POST ${REFRESH}`]);
    expect(out).toContain(`  - nsmgr-proxy.nsm-system.${D} SRV 0 100 5004 nsmgr-proxy.nsm-system.${D}`);
    expect(out).toContain(`  + vl3-ipam.nsm-system.${D} A 192.0.2.7`);
    expect(out.slice(-3)).toEqual([
      'NSM resolves:',
      `  registry.nsm-system.${D} -> tcp://192.0.2.9:5002, tcp://[2001:db8::1]:5002`,
      `  vl3-ipam.nsm-system.${D} -> 192.0.2.7 (A/AAAA only, no SRV)`,
    ]);
  });

  it('reads the token from --token-file and talks to --server', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-nsm-cli-'));
    const file = path.join(dir, 'token');
    writeFileSync(file, `${token}\n`);
    const io = fakeIo({});
    expect(
      await nsmCommand.run(
        [
          'publish',
          '--domain',
          D,
          '--floating',
          '--registry',
          '192.0.2.9:5002',
          '--registry',
          '[2001:db8::1]:5002',
          '--service',
          'vl3-ipam=192.0.2.7',
          '--ttl',
          '300',
          '--server',
          h.server.url,
          '--token-file',
          file,
        ],
        io,
      ),
    ).toBe(0);
    expect(io.lines[0]).toMatch(/already published as asked/);
    expect(calls()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("another tenant's publish or unpublish fails with PermissionDenied and sends nothing", async () => {
    for (const args of [
      ['publish', '--domain', D, '--floating', '--registry', '192.0.2.66:5002'],
      ['unpublish', '--domain', D],
    ]) {
      const e = await rejected(run(args, other));
      expect(e).toBeInstanceOf(ConnectError);
      expect((e as ConnectError).code).toBe(Code.PermissionDenied);
      expect((e as ConnectError).rawMessage).toMatch(/belongs to tenant "c1"/);
    }
    expect(calls()).toEqual([]);
  });

  it('unpublishes and prints the deletions; again, nothing', async () => {
    const { out } = await run(['unpublish', '--domain', D]);
    expect(out[0]).toMatch(new RegExp(`^unpublished NSM domain ${D} \\(zone ${ZONE}\\): 4 change\\(s\\), 5 OVH call\\(s\\), generation \\d+$`));
    expect(out.slice(1, 5)).toEqual([
      `  - registry.nsm-system.${D} A 192.0.2.9`,
      `  - registry.nsm-system.${D} AAAA 2001:db8::1`,
      `  - registry.nsm-system.${D} SRV 0 100 5002 registry.nsm-system.${D}`,
      `  - vl3-ipam.nsm-system.${D} A 192.0.2.7`,
    ]);
    expect(calls().filter((c) => c.startsWith('DELETE '))).toHaveLength(4); // 4 record sets of one record each
    expect(calls().at(-1)).toBe(`POST ${REFRESH}`);
    h.sim.clearCalls();
    const again = await run(['unpublish', '--domain', D]);
    expect(again.out).toEqual([`nothing is published for NSM domain ${D} (zone ${ZONE}): no change, no OVH call`]);
    expect(calls()).toEqual([]);
  });
});

describe('bad arguments are refused before anything is sent', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['no subcommand', [], /^nsm: unknown subcommand ""/],
    ['no --domain', ['publish', '--registry', '192.0.2.1:5002', '--floating'], /^--domain: is required/],
    ['no --registry', ['publish', '--domain', D, '--floating'], /^--registry: is required/],
    [
      'no --nsmgr-proxy without --floating',
      ['publish', '--domain', D, '--registry', '192.0.2.1:5002'],
      /^--nsmgr-proxy: is required for an interdomain cluster; use --floating/,
    ],
    [
      '--floating with --nsmgr-proxy',
      ['publish', '--domain', D, '--floating', '--registry', '192.0.2.1:5002', '--nsmgr-proxy', '192.0.2.2:5004'],
      /^--floating: a floating domain publishes only its registry/,
    ],
    [
      'IPv6 without brackets',
      ['publish', '--domain', D, '--floating', '--registry', '2001:db8::1:5002'],
      /^--registry: "2001:db8::1:5002": put an IPv6 address in brackets/,
    ],
    ['no port', ['publish', '--domain', D, '--floating', '--registry', '192.0.2.1'], /^--registry: "192.0.2.1" has no port/],
    ['port 0', ['publish', '--domain', D, '--floating', '--registry', '192.0.2.1:0'], /^--registry: "192.0.2.1:0": the port must be from 1 to 65535/],
    ['port 65536', ['publish', '--domain', D, '--floating', '--registry', '192.0.2.1:65536'], /the port must be from 1 to 65535/],
    [
      'a host name',
      ['publish', '--domain', D, '--floating', '--registry', 'registry.example.net:5002'],
      /^--registry: "registry.example.net:5002" is not IP:PORT/,
    ],
    [
      'bad --service',
      ['publish', '--domain', D, '--floating', '--registry', '192.0.2.1:5002', '--service', 'vl3-ipam'],
      /^--service: "vl3-ipam" must be NAME=IP/,
    ],
    [
      'mixed ports in one service',
      ['publish', '--domain', D, '--floating', '--registry', '192.0.2.1:5002', '--registry', '[2001:db8::1]:5003'],
      /^--registry: every address of one service has the same port \(got 5002 and 5003\)/,
    ],
    ['bad --ttl', ['publish', '--domain', D, '--floating', '--registry', '192.0.2.1:5002', '--ttl', '1.5'], /^--ttl: must be a whole number/],
  ];
  it.each(cases)('%s', async (_name, args, message) => {
    const e = await rejected(run(args));
    expect(e).toBeInstanceOf(InvalidInputError);
    expect((e as Error).message).toMatch(message);
    expect(calls()).toEqual([]);
  });

  it("the server's own checks come back as InvalidArgument (two IPv4 addresses for one service)", async () => {
    const e = await rejected(run(['publish', '--domain', D, '--floating', '--registry', '192.0.2.1:5002', '--registry', '192.0.2.2:5002']));
    expect((e as ConnectError).code).toBe(Code.InvalidArgument);
    expect((e as ConnectError).rawMessage).toMatch(/^services\[0\]\.addresses\[1\]: a second IPv4 address/);
    expect(calls()).toEqual([]);
  });

  it('parseHostPort reads IPv4, bracketed IPv6, and portless forms where allowed', () => {
    expect(parseHostPort('192.0.2.1:5002', '--registry', false)).toEqual({ address: '192.0.2.1', port: 5002 });
    expect(parseHostPort('[2001:db8::1]:5002', '--registry', false)).toEqual({ address: '2001:db8::1', port: 5002 });
    expect(parseHostPort('[2001:db8::1]', '--service x', true)).toEqual({ address: '2001:db8::1' });
    expect(parseHostPort('192.0.2.7', '--service x', true)).toEqual({ address: '192.0.2.7' });
    expect(() => parseHostPort('[192.0.2.1]:5002', '--registry', false)).toThrow(/in brackets is not an IPv6 address/);
  });
});
