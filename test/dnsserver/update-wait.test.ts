/**
 * DNSPLANE_DNS_UPDATE_WAIT: an UPDATE's NOERROR waits until its change is visible on the zone's
 * authoritative servers (the simulator's two, one of them held until the test releases it), at most
 * the bound, and at the bound is NOERROR anyway; never past what the client waits
 * (DNSPLANE_DNS_CLIENT_TIMEOUT, 2 s by default: miekg/dns's, cert-manager's); off (the default) it
 * answers once published. Signed UPDATEs over TCP and UDP to a real server, real Postgres, the OVH
 * simulator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { CLASS, OPCODE, RCODE, TYPE, encodeMessage, signMessage } from '../../src/dns/wire/index.js';
import { VisibilityState } from '../../src/gen/dnsplane/v1/visibility_pb.js';
import { memoryKeyring } from '../helpers/dns-keys.js';
import { tcpExchange, udpExchange } from '../helpers/dns-client.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const ZONE = 'wait.test';
const NS1 = 'ns1.sim.test';

interface Door {
  h: Harness;
  key: TsigKey;
  admin: string;
}

/** `clientTimeout`: DNSPLANE_DNS_CLIENT_TIMEOUT (these tests' own client waits 120 s; null: unset, the default 2 s). */
async function door(wait: string | undefined, clientTimeout: string | null = '120s'): Promise<Door> {
  const keyring = memoryKeyring();
  const env = {
    DNSPLANE_DNS_LISTEN: '127.0.0.1:0',
    ...(wait ? { DNSPLANE_DNS_UPDATE_WAIT: wait } : {}),
    ...(clientTimeout ? { DNSPLANE_DNS_CLIENT_TIMEOUT: clientTimeout } : {}),
  };
  const h = await startHarness({ zones: { [ZONE]: [] }, env, dnsKeyring: keyring });
  const alice = await createTenant(h.server.ctx.pool, { name: 'alice', zones: [ZONE] });
  return { h, key: keyring.add(alice.tenant), admin: await h.tenant('root', [], { admin: true }) };
}

/** One signed UPDATE adding a TXT record. */
function addMessage(d: Door, name: string): Buffer {
  const msg = encodeMessage({
    header: { id: 7, qr: false, opcode: OPCODE.UPDATE, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
    questions: [{ name: ZONE, type: TYPE.SOA, class: CLASS.IN }],
    answers: [],
    authorities: [{ name: `${name}.${ZONE}`, type: TYPE.TXT, class: CLASS.IN, ttl: 60, data: { kind: 'TXT', strings: [Buffer.from(name)] } }],
    additionals: [],
  });
  return signMessage(msg, d.key, undefined).bytes;
}

/** Sends addMessage over TCP; resolves with the RCODE when answered (waiting up to 120 s). */
async function add(d: Door, name: string): Promise<number> {
  const answers = await tcpExchange(d.h.server.dns!.port, addMessage(d, name), { timeoutMs: 120_000 });
  return answers[0]!.parsed.message.header.rcode;
}

/** The latest journal row of the zone and where its publish stands. */
async function latest(d: Door) {
  return (await d.h.adminClient(d.admin).listJournal({ zone: ZONE, limit: 1 })).entries[0];
}

describe('DNSPLANE_DNS_UPDATE_WAIT=60s', () => {
  let d: Door;
  beforeAll(async () => {
    d = await door('60s');
  });
  afterAll(async () => {
    await d?.h.close();
  });

  it('NOERROR only once both servers answer the change', async () => {
    d.h.sim.propagation.hold(NS1);
    let answered = false;
    const pending = add(d, 'held').then((rcode) => {
      answered = true;
      return rcode;
    });
    // Published and seen on dns1; the answer still waits for ns1, held.
    await until('dns1 seen answering', async () => (await latest(d))?.visibility?.servers.some((s) => s.firstAnsweredAt !== undefined) === true);
    expect(answered).toBe(false);
    expect((await latest(d))!.visibility!.state).toBe(VisibilityState.PUBLISHED);
    d.h.sim.propagation.release(NS1);
    expect(await pending).toBe(RCODE.NOERROR);
    expect((await latest(d))!.visibility!.state).toBe(VisibilityState.VISIBLE);
  });

  it('an UPDATE that changes nothing does not wait', async () => {
    d.h.sim.propagation.hold(NS1);
    try {
      // Already there (the previous test's value): no publish, NOERROR at once.
      expect(await add(d, 'held')).toBe(RCODE.NOERROR);
    } finally {
      d.h.sim.propagation.release(NS1);
    }
  });
});

describe('DNSPLANE_DNS_UPDATE_WAIT=2s, a server that never publishes', () => {
  let d: Door;
  beforeAll(async () => {
    d = await door('2s');
  });
  afterAll(async () => {
    await d?.h.close();
  });

  it('at the bound, NOERROR anyway: the change is applied', async () => {
    d.h.sim.propagation.setLag('never', NS1);
    const started = Date.now();
    expect(await add(d, 'bound')).toBe(RCODE.NOERROR);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(d.h.sim.publishedRecords(ZONE).some((r) => r.subDomain === 'bound' && r.fieldType === 'TXT')).toBe(true);
    expect((await latest(d))!.visibility!.state).toBe(VisibilityState.PUBLISHED);
  });
});

describe("DNSPLANE_DNS_UPDATE_WAIT=60s with the default DNSPLANE_DNS_CLIENT_TIMEOUT (2 s, miekg/dns's)", () => {
  let d: Door;
  beforeAll(async () => {
    d = await door('60s', null);
  });
  afterAll(async () => {
    await d?.h.close();
  });

  it.each(['tcp', 'udp'] as const)(
    "%s: a client that waits 2 s, as cert-manager's does, gets its NOERROR while a server still lacks the change",
    async (transport) => {
      d.h.sim.propagation.hold(NS1);
      try {
        // No retry: the first message's answer must come within the client's 2 s.
        const bytes = addMessage(d, `cm-${transport}`);
        const answer =
          transport === 'tcp'
            ? (await tcpExchange(d.h.server.dns!.port, bytes, { timeoutMs: 2_000 }))[0]
            : await udpExchange(d.h.server.dns!.port, bytes, 2_000);
        expect(answer?.parsed.message.header.rcode).toBe(RCODE.NOERROR);
        expect((await latest(d))!.visibility!.state).toBe(VisibilityState.PUBLISHED); // waited, and gave up in time
      } finally {
        d.h.sim.propagation.release(NS1);
      }
    },
  );
});

describe('DNSPLANE_DNS_UPDATE_WAIT unset (off)', () => {
  let d: Door;
  beforeAll(async () => {
    d = await door(undefined);
  });
  afterAll(async () => {
    await d?.h.close();
  });

  it('NOERROR once published, while neither server answers the change yet', async () => {
    d.h.sim.propagation.hold();
    try {
      expect(await add(d, 'quick')).toBe(RCODE.NOERROR);
      const entry = (await latest(d))!;
      // The journal (ListJournal, the console's Detail) and GetApply (`dnsplane journal show`) name the door and the key.
      expect(entry.summary).toBe(`DNS UPDATE signed by ${d.key.name}.`);
      expect((await d.h.zoneClient(d.admin).getApply({ journalId: entry.id })).summary).toBe(`DNS UPDATE signed by ${d.key.name}.`);
      expect(entry.visibility!.state).toBe(VisibilityState.PUBLISHED);
      expect(entry.visibility!.servers.every((s) => s.firstAnsweredAt === undefined)).toBe(true);
    } finally {
      d.h.sim.propagation.release();
    }
  });
});
