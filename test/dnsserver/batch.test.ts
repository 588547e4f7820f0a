/**
 * external-dns's rfc2136 provider with the flags docs/certificates.md recommends, against the OVH
 * simulator at the default OVH rate (DNSPLANE_OVH_RATE=20): each batch (one UPDATE of
 * --rfc2136-batch-change-size record sets, as external-dns sends them: an add per created record, a
 * "remove old, add new" per updated one, over TCP) is answered NOERROR with no retry, its OVH calls —
 * spaced by the rate limiter — all made within 2 s, miekg/dns's fixed client timeout, which
 * external-dns cannot change. (The calls' span is what the batch size decides; the wall time of the
 * whole exchange on a loaded test machine is the machine's, so the exchange itself waits longer.) The batch size printed by
 * `tenant tsig create` (client-configs.js, through cli/key-configs.ts) is the same number. A batch over the change threshold is
 * refused whole, its reason said once ("change threshold: …", not twice).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dnsUpdateBatchSize } from '../../src/cli/key-configs.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { CLASS, OPCODE, RCODE, TYPE, encodeMessage, signMessage, type ResourceRecord } from '../../src/dns/wire/index.js';
import { memoryKeyring } from '../helpers/dns-keys.js';
import { tcpExchange } from '../helpers/dns-client.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { memoryLogger } from '../helpers/sim-server.js';
import * as store from '../../src/store/index.js';

const ZONE = 'batch.test';
/** miekg/dns's client timeout (dns.Client: 2 s for the read), as external-dns and cert-manager use it. */
const MIEKG_TIMEOUT_MS = 2_000;
/** How long the test's own client waits for an answer: far longer, so that a busy machine fails nothing. */
const ANSWER_WAIT_MS = 60_000;
let h: Harness;
let key: TsigKey;
let lines: Array<Record<string, unknown>>;

/** The batch size docs/certificates.md recommends in its external-dns flags. */
function documentedBatchSize(): number {
  const docs = readFileSync(new URL('../../docs/certificates.md', import.meta.url), 'utf8');
  const sizes = [...docs.matchAll(/--rfc2136-batch-change-size=(\d+)/g)].map((m) => Number(m[1]));
  expect(sizes.length).toBeGreaterThan(0);
  expect(new Set(sizes).size).toBe(1);
  return sizes[0]!;
}

const a = (name: string, address: string, cls: number = CLASS.IN): ResourceRecord => ({
  name: `${name}.${ZONE}`,
  type: TYPE.A,
  class: cls,
  ttl: cls === CLASS.IN ? 300 : 0,
  data: { kind: 'A', address },
});

/** One UPDATE over TCP, answered within miekg's timeout or not at all (undefined). */
async function send(updates: ResourceRecord[]): Promise<number | undefined> {
  const msg = encodeMessage({
    header: { id: 42, qr: false, opcode: OPCODE.UPDATE, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
    questions: [{ name: ZONE, type: TYPE.SOA, class: CLASS.IN }],
    answers: [],
    authorities: updates,
    additionals: [],
  });
  const [answer] = await tcpExchange(h.server.dns!.port, signMessage(msg, key, undefined).bytes, { timeoutMs: ANSWER_WAIT_MS });
  return answer?.parsed.message.header.rcode;
}

beforeAll(async () => {
  const keyring = memoryKeyring();
  const logged = memoryLogger('info');
  lines = logged.lines;
  // The default OVH rate (the harness otherwise raises it for speed).
  h = await startHarness({
    zones: { [ZONE]: [] },
    env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_OVH_RATE: '20' },
    dnsKeyring: keyring,
    logger: logged.log,
  });
  const tenant = await createTenant(h.server.ctx.pool, { name: 'cluster1', zones: [ZONE] });
  key = keyring.add(tenant.tenant);
  await h.zoneClient(tenant.token).records({ zones: [ZONE] }); // the zone's first sync, as external-dns's AXFR would
});

afterAll(async () => {
  await h?.close();
});

it('the documented batch size is what fits the default rate, and what tenant tsig create prints', () => {
  expect(documentedBatchSize()).toBe(dnsUpdateBatchSize(20));
});

/** From the first OVH write the simulator saw to the last (the refresh), in ms. */
function writeSpanMs(): number {
  const at = h.sim.writes().map((w) => w.at);
  return Math.max(...at) - Math.min(...at);
}

it("a batch of creates and a batch of updates of that size are each answered NOERROR, no retry, their OVH calls within the client's 2 s", async () => {
  const n = documentedBatchSize();
  const names = Array.from({ length: n }, (_, i) => `svc${i}`);
  h.sim.clearCalls();
  expect(await send(names.map((x, i) => a(x, `192.0.2.${i + 1}`)))).toBe(RCODE.NOERROR);
  expect(h.sim.writes().map((w) => w.method)).toEqual([...names.map(() => 'POST'), 'POST']); // n creations and the refresh
  expect(writeSpanMs()).toBeLessThan(MIEKG_TIMEOUT_MS);
  h.sim.clearCalls();
  // external-dns's update: remove the old record, add the new one.
  const updates = names.flatMap((x, i) => [a(x, `192.0.2.${i + 1}`, CLASS.NONE), a(x, `198.51.100.${i + 1}`)]);
  // Updating every record set the tenant owns is over the change threshold (30% by default): the
  // whole UPDATE is refused, nothing sent, the reason said once (docs/certificates.md says so).
  expect(await send(updates)).toBe(RCODE.REFUSED);
  expect(h.sim.writes()).toEqual([]);
  expect(lines.filter((l) => l['msg'] === 'dns: refused').map((l) => l['reason'])).toEqual([
    expect.stringMatching(
      new RegExp(
        `^change threshold: this apply would update ${n} of the ${n} record sets tenant "cluster1" owns in zone ${ZONE} \\(100%, over the limit of 30%\\); nothing was sent\\.`,
      ),
    ),
  ]);
  // What the docs advise for an external-dns tenant: its own limit raised.
  await store.setMaxChangePercent(h.server.ctx.pool, 'cluster1', 100);
  expect(await send(updates)).toBe(RCODE.NOERROR);
  expect(h.sim.writes()).toHaveLength(n + 1);
  expect(writeSpanMs()).toBeLessThan(MIEKG_TIMEOUT_MS);
  expect(
    h.sim
      .publishedRecords(ZONE)
      .filter((r) => r.fieldType === 'A')
      .map((r) => r.target)
      .sort(),
  ).toEqual(names.map((_, i) => `198.51.100.${i + 1}`).sort());
});
