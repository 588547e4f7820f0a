/**
 * The admin console in a real headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against a real server: sign-in (the token in sessionStorage, never in a URL, a request line or a
 * log), every page's content checked against what the API answers, a zone of 5,000 records paged, a
 * PlanAs dry run whose diff is the CLI's rendering of the API's plan and which applies nothing; the
 * console's writes (tenants, tokens, thresholds, TSIG and OVH keys), each through its confirm step and
 * checked through the API, and a cross-site form refused; and a tenant token refused on the admin
 * pages, with no write control.
 *
 * Without Chromium the file is skipped, saying how to install it; with CI=true a missing Chromium
 * fails. DNSPLANE_CONSOLE_SCREENSHOTS=DIR saves a screenshot of each page there (docs/console/).
 */
import { create } from '@bufbuild/protobuf';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { Code, ConnectError } from '@connectrpc/connect';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderPlan } from '../../src/cli/render.js';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { EndpointSchema, Policy, TargetStatus, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { DEFAULT_HEALTH, HealthChecker } from '../../src/core/health/checker.js';
import { coreWithdrawals } from '../../src/core/health/mechanism.js';
import { VisibilityState, type Visibility } from '../../src/gen/dnsplane/v1/visibility_pb.js';
import type { SimRecordInit } from '../../src/ovhsim/index.js';
import { tsigKeyring, type TsigAlgorithm } from '../../src/core/keys/tsig.js';
import { RCODE, TYPE } from '../../src/dns/wire/index.js';
import { ovhKeyConfigs, tsigConfigs } from '../../src/cli/key-configs.js';
import * as store from '../../src/store/index.js';
import { query, udpExchange } from '../helpers/dns-client.js';
import { callLines, ep } from '../helpers/expect.js';
import { ovhCall } from '../helpers/ovh-api-client.js';
import { startIssuer } from '../helpers/oidc-issuer.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const CANDIDATES = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
const CHROMIUM = CANDIDATES.find((p): p is string => typeof p === 'string' && p !== '' && existsSync(p));
const HOW = 'install it with `apt-get update && apt-get install -y chromium` (or set CHROMIUM_PATH)';
const IN_CI = Boolean(process.env['CI']) && process.env['CI'] !== 'false';
const SHOTS = process.env['DNSPLANE_CONSOLE_SCREENSHOTS'];

const ZONE = 'console.test';
const BIG = 'big.test';
const OTHER = 'other.test';
const BIG_RECORDS = 5000;
const NS1 = 'ns1.sim.test';

if (!CHROMIUM) {
  if (IN_CI) {
    it('the console tests need Chromium in CI', () => {
      throw new Error(`Chromium not found (looked for ${CANDIDATES.filter(Boolean).join(', ')}): ${HOW}; .ci/run installs it`);
    });
  } else {
    console.warn(`test/ui/console.test.ts: SKIPPED, Chromium not found — ${HOW}`);
    it.skip(`the console in Chromium (Chromium not found: ${HOW})`, () => undefined);
  }
}

describe.runIf(CHROMIUM)('the admin console in Chromium', () => {
  let h: Harness;
  let browser: Browser;
  const tokens: Record<string, string> = {};
  /** TSIG secrets issued: never on a page. */
  const tsigSecrets: string[] = [];
  const logLines: string[] = [];
  /** Every URL the browsers asked for. */
  const requested: string[] = [];

  const ui = () => `${h.server.url}/ui/`;

  /** Waits until no journal entry's publish is still being probed (PUBLISHED): the visibility the pages show stays put. */
  const everyPublishFinal = () =>
    until('every publish final', async () => {
      const entries = (await h.adminClient(tokens['admin']).listJournal({ limit: 1000 })).entries;
      return entries.every((e) => !e.visibility || e.visibility.state !== VisibilityState.PUBLISHED);
    });
  const text = (page: Page, selector: string) => page.locator(selector).allInnerTexts();
  const rowsOf = (page: Page, testid: string) =>
    page
      .locator(`[data-testid=${testid}] tbody tr:not(.detail)`)
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td as unknown as { innerText: string }).innerText.trim())));

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    page.on('request', (r) => void requested.push(r.url()));
    page.on('pageerror', (e) => {
      throw e;
    });
    return page;
  }

  async function signIn(page: Page, token: string): Promise<void> {
    await page.goto(ui());
    await page.fill('#token', token);
    await page.click('[data-testid=signin] button[type=submit]');
    await page.waitForSelector('[data-testid=who]');
  }

  /** Goes to a hash route and waits until the page has drawn `ready`. */
  async function open(page: Page, route: string, ready: string): Promise<void> {
    await page.evaluate(`location.hash = ${JSON.stringify(`#/${route}`)}`);
    await page.waitForSelector(`section.page[data-page="${route.replace(/\/.*$/, '/').replace(/\/$/, '')}"] ${ready}`);
  }

  async function shot(page: Page, name: string, fullPage = true): Promise<void> {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
  }

  const upsert = (endpoints: Endpoint[]) => ({
    source: { case: 'plan' as const, value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired' as const, value: { zones: [], endpoints } } } },
  });
  const ownerOf = (e: Endpoint) => e.labels['owner'] ?? '';
  const targetText = (e: Endpoint) => (e.recordType === 'TXT' ? e.targets.map((t) => JSON.stringify(t)) : e.targets).join(', ');
  const healthText = (e: Endpoint) =>
    [
      ...e.targetStates.map((s) => `${s.target} ${TargetStatus[s.status].toLowerCase()}`),
      ...(e.labels['dnsplane/health-check'] ? [`check ${e.labels['dnsplane/health-check']}`] : []),
    ].join(' ');
  const recordRow = (e: Endpoint) => [
    e.dnsName,
    e.recordType,
    targetText(e),
    e.ttl === 0 ? 'default' : String(e.ttl),
    `${ownerOf(e) === '' ? '(no owner)' : ownerOf(e)}${e.labels['dnsplane/shared'] === 'true' ? ' shared' : ''}`,
    healthText(e),
  ];

  beforeAll(async () => {
    const big: SimRecordInit[] = Array.from({ length: BIG_RECORDS }, (_, i) => ({
      subDomain: `h${i}`,
      fieldType: 'A',
      target: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`,
      ttl: 60,
    }));
    h = await startHarness({
      zones: {
        [ZONE]: [{ subDomain: 'legacy', fieldType: 'A', target: '192.0.2.200', ttl: 600 }],
        [BIG]: big,
        [OTHER]: [],
      },
      // A publish one server never answers is not_visible after DNSPLANE_VISIBLE_TIMEOUT (the others are visible within seconds).
      env: {
        DNSPLANE_DRIFT_INTERVAL: '0',
        DNSPLANE_OVH_RATE: '100000',
        DNSPLANE_OVH_CONCURRENCY: '32',
        DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'),
        DNSPLANE_VISIBLE_TIMEOUT: '15s',
        DNSPLANE_DNS_LISTEN: '127.0.0.1:0',
        // Health rounds are run by the records test itself: the server's own checker, on its timer,
        // would race it for the set's lease (and withdraw and restore targets the journal test then sees).
        DNSPLANE_HEALTH_INTERVAL: 'off',
      },
      logger: pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) }),
    });
    tokens['admin'] = await h.tenant('admin', [], { admin: true });
    tokens['alice'] = await h.tenant('alice', [ZONE, BIG]);
    tokens['bob'] = await h.tenant('bob', [ZONE]);
    const alice = h.zoneClient(tokens['alice']);
    const bob = h.zoneClient(tokens['bob']);
    // Publishes and where they stand on the zones' two servers: one ns1 never answers (not visible
    // once DNSPLANE_VISIBLE_TIMEOUT passes: no later refresh of its zone brings it to ns1), one a later
    // apply of the same name supersedes while ns1 holds it, the rest visible (ns1 a little after dns1).
    h.sim.propagation.setLag('never', NS1);
    await h.zoneClient(tokens['admin']).apply(upsert([ep(`stuck.${OTHER}`, 'A', ['192.0.2.50'])]));
    h.sim.propagation.setLag(0, NS1);
    h.sim.propagation.hold(NS1);
    await alice.apply(upsert([ep(`twice.${ZONE}`, 'A', ['192.0.2.51'])]));
    await alice.apply(upsert([ep(`twice.${ZONE}`, 'A', ['192.0.2.52'])]));
    h.sim.propagation.release(NS1);
    h.sim.propagation.setLag(400, NS1);
    await alice.apply(upsert([ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.2']), ep(`txt.${ZONE}`, 'TXT', ['hello "console"'], 0)]));
    await bob.apply(upsert([ep(`api.${ZONE}`, 'CNAME', [`www.${ZONE}`], 120)]));
    // A failed apply (OVH refuses the second creation; the first is undone) ...
    h.sim.faults.fail({
      method: 'POST',
      path: `/domain/zone/${ZONE}/record`,
      nth: 2,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'Invalid target' } },
    });
    await alice.apply(upsert([ep(`f1.${ZONE}`, 'A', ['192.0.2.31']), ep(`f2.${ZONE}`, 'A', ['192.0.2.32'])])).catch(() => undefined);
    // ... one whose refresh kept failing (left in flight, then rolled back by the next lock holder) ...
    h.sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, times: 4, effect: { kind: 'status', status: 500 } });
    await bob.apply(upsert([ep(`r1.${ZONE}`, 'A', ['192.0.2.41'])])).catch(() => undefined);
    // ... a record changed by hand in OVH, which the drift check finds (and recovers the apply above).
    h.sim.addRecord(ZONE, { subDomain: 'byhand', fieldType: 'TXT', target: 'added in the control panel', ttl: 0 });
    h.sim.publish(ZONE);
    await checkZoneDrift(h.server.ctx, ZONE);
    // The big zone. Its first sync would cost 5,000 GETs of the simulator, which is not what this file
    // tests: the cache is filled with exactly the simulator's records (ids included), as a first sync
    // leaves it, and a drift check proves it: the same ids and zone file, no record re-read.
    await store.withTransaction(h.server.ctx.pool, async (tx) => {
      await store.replaceZoneRecords(
        tx,
        BIG,
        h.sim.draftRecords(BIG).map((r) => ({ id: r.id, subDomain: r.subDomain, fieldType: r.fieldType, target: r.target, ttl: r.ttl })),
      );
      await store.markSynced(tx, BIG);
      await store.bumpGeneration(tx, BIG);
    });
    h.sim.clearCalls();
    expect(await checkZoneDrift(h.server.ctx, BIG)).toMatchObject({ status: 'unchanged', calls: 3, added: 0, removed: 0, updated: 0 });
    // A few record sets of alice's in it.
    await alice.apply(upsert([ep(`app.${BIG}`, 'A', ['192.0.2.10']), ep(`mail.${BIG}`, 'MX', [`10 mx.${BIG}`], 3600)]));
    await checkZoneDrift(h.server.ctx, BIG);
    // Stored plans: alice's own, and one an admin made for bob.
    await alice.plan({
      policy: Policy.SYNC,
      input: { case: 'desired', value: { zones: [ZONE], endpoints: [ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.3'])] } },
    });
    await h.adminClient(tokens['admin']).planAs({
      tenant: 'bob',
      request: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`www.${ZONE}`, 'A', ['192.0.2.9'])] } } },
    });
    // TSIG keys: one of alice's used once (its "last used" recorded), an acme-only one of bob's.
    const adminClient = h.adminClient(tokens['admin']);
    const used = await adminClient.createTsigKey({ tenant: 'alice', name: 'cluster1.alice.dnsplane' });
    const acme = await adminClient.createTsigKey({ tenant: 'bob', algorithm: 'hmac-sha512', acmeOnly: true });
    tsigSecrets.push(used.secret, acme.secret);
    // An OVH key of bob's, and a write staged with it through the served OVH API, not refreshed.
    const ovhKey = (await adminClient.createOvhKey({ tenant: 'bob' })).issued!;
    tsigSecrets.push(ovhKey.applicationSecret, ovhKey.consumerKey);
    const keyValues = { applicationKey: ovhKey.key!.applicationKey, applicationSecret: ovhKey.applicationSecret, consumerKey: ovhKey.consumerKey };
    expect(
      (
        await ovhCall(`${h.server.url}/ovh/1.0`, keyValues, 'POST', `/domain/zone/${ZONE}/record`, {
          body: { fieldType: 'TXT', subDomain: 'staged', target: 'not yet', ttl: 60 },
        })
      ).status,
    ).toBe(200);
    while (!(await store.getOvhKey(h.server.ctx.pool, keyValues.applicationKey))?.lastUsedAt) await new Promise((r) => setTimeout(r, 10));
    const ring = tsigKeyring(h.server.ctx);
    ring.noteUsed((await ring.find('cluster1.alice.dnsplane'))!);
    while (!(await store.getTsigKey(h.server.ctx.pool, 'cluster1.alice.dnsplane'))?.lastUsedAt) await new Promise((r) => setTimeout(r, 10));
    // Every publish final (the states the pages show do not move under the assertions).
    await everyPublishFinal();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await h?.close();
    // No token ever left the page other than in the Authorization header.
    for (const token of Object.values(tokens)) {
      expect(requested.filter((u) => u.includes(token))).toEqual([]);
      expect(logLines.filter((l) => l.includes(token))).toEqual([]);
    }
  });

  it('signs in with a token kept in sessionStorage (never in the URL); a wrong token is refused', async () => {
    const page = await newPage();
    await page.goto(ui());
    await page.waitForSelector('[data-testid=signin]');
    await shot(page, 'sign-in');
    await page.fill('#token', 'dnsp_not-a-real-token');
    await page.click('[data-testid=signin] button[type=submit]');
    await expect.poll(() => page.locator('[data-testid=signin-status]').innerText()).toMatch(/^That token was refused: invalid or disabled token/);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);

    await signIn(page, tokens['admin']!);
    expect(await page.locator('[data-testid=who]').innerText()).toBe('admin (admin)');
    expect(await page.evaluate(`sessionStorage.getItem('dnsplane.token')`)).toBe(tokens['admin']);
    expect(page.url()).toBe(`${ui()}#/zones`);
    expect(await text(page, '#nav a')).toEqual(['Zones', 'Journal', 'Plans', 'Tenants', 'PlanAs', 'Accounts', 'Orphans']);
    // A reload keeps the session; signing out forgets the token.
    await page.reload();
    await page.waitForSelector('[data-testid=who]');
    await page.click('[data-testid=signout]');
    await page.waitForSelector('[data-testid=signin]');
    expect(await page.evaluate(`sessionStorage.getItem('dnsplane.token')`)).toBeNull();
    await page.context().close();
  });

  describe('as an admin', () => {
    let page: Page;
    beforeAll(async () => {
      page = await newPage();
      await signIn(page, tokens['admin']!);
    });
    afterAll(async () => {
      await page?.context().close();
    });

    it('zones: generation, record count, last sync, drift state and applies in flight, as ListZones answers', async () => {
      await open(page, 'zones', '[data-testid=zones] table');
      const api = (await h.zoneClient(tokens['admin']).listZones({})).zones;
      const rows = await rowsOf(page, 'zones');
      const drift: Record<string, string> = { unchecked: 'not checked yet', in_sync: 'in sync', drift_found: 'drift found' };
      expect(rows.map((r) => r.slice(0, 4))).toEqual(api.map((z) => [z.name, z.state, String(z.generation), String(z.recordCount)]));
      expect(rows.map((r) => r[5]!.split('\n')[0])).toEqual(api.map((z) => drift[z.drift!.state]));
      expect(api.find((z) => z.name === ZONE)!.drift!.state).toBe('drift_found');
      expect(rows.find((r) => r[0] === ZONE)![5]).toMatch(/last found .*: \+1 −0 ~0/);
      expect(rows.map((r) => r[6])).toEqual(api.map((z) => String(z.inFlightApplies)));
      // Each zone's latest publishes: the delay once visible, else the state.
      expect(rows.map((r) => r[7])).toEqual(api.map((z) => (z.recentPublishes.length ? z.recentPublishes.map(chip).join('\n') : 'none yet')));
      expect(api.find((z) => z.name === ZONE)!.recentPublishes.map((v) => v.state)).toContain(VisibilityState.VISIBLE);
      expect(api.find((z) => z.name === BIG)!.recordCount).toBe(BIG_RECORDS + 2 + 2); // + the simulator's NS pair + alice's two
      await shot(page, 'zones');
    });

    it('orphans (issue 46): what nobody will write again, as ListOrphans answers', async () => {
      await open(page, 'orphans', '[data-testid=orphans] table');
      const api = (await h.adminClient(tokens['admin']).listOrphans({})).orphans;
      expect(api.length).toBeGreaterThan(0);
      // The first page of 100 rows (the table pages: test 'a zone of 5000 records' covers paging).
      const rows = await rowsOf(page, 'orphans');
      expect(rows.map((r) => r.slice(0, 6))).toEqual(
        api.slice(0, 100).map((o) => [o.zone, o.dnsName, o.recordType, o.target || o.targets.join(', ') || '—', o.tenant || '—', o.reason]),
      );
    });

    it('records: every record set with its owner, filtered by name, type and owner, as Records answers', async () => {
      await open(page, `zones/${ZONE}`, '[data-testid=records] table');
      const api = (await h.zoneClient(tokens['admin']).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints;
      expect(await rowsOf(page, 'records')).toEqual(api.map(recordRow));
      expect(api.map(ownerOf)).toEqual(expect.arrayContaining(['alice', 'bob', '']));

      await page.selectOption('[data-testid=filter-type]', 'A');
      expect(await rowsOf(page, 'records')).toEqual(api.filter((e) => e.recordType === 'A').map(recordRow));
      await page.selectOption('[data-testid=filter-type]', '');
      await page.selectOption('[data-testid=filter-owner]', 'bob');
      expect(await rowsOf(page, 'records')).toEqual(api.filter((e) => ownerOf(e) === 'bob').map(recordRow));
      await page.selectOption('[data-testid=filter-owner]', { label: '(no owner)' });
      expect(await rowsOf(page, 'records')).toEqual(api.filter((e) => ownerOf(e) === '').map(recordRow));
      await page.selectOption('[data-testid=filter-owner]', '');
      await page.fill('[data-testid=filter-name]', 'WW');
      await expect.poll(() => rowsOf(page, 'records')).toEqual(api.filter((e) => e.dnsName.includes('ww')).map(recordRow));
      expect(await page.locator('[data-testid=count]').innerText()).toBe(`1 of ${api.length} record sets match`);
      await page.fill('[data-testid=filter-name]', '');
      await expect.poll(() => page.locator('[data-testid=count]').innerText()).toBe(`${api.length} record sets`);
      await shot(page, 'records');
    });

    it('records: an admin downloads the zone as a zone file, the one ExportZone answers, with 0 OVH calls', async () => {
      await open(page, `zones/${ZONE}`, '[data-testid=records] table');
      h.sim.clearCalls();
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-zone]')]);
      expect(download.suggestedFilename()).toBe(`${ZONE}.zone`);
      const saved = await readFile((await download.path())!, 'utf8');
      const api = await h.adminClient(tokens['admin']).exportZone({ zone: ZONE, includeOwners: true });
      const body = (t: string) => t.split('\n').filter((l) => !l.startsWith('; '));
      expect(body(saved)).toEqual(body(api.zoneFile));
      expect(saved).toContain('; owner alice');
      await expect
        .poll(() => page.locator('[data-testid=export-status]').innerText())
        .toBe(` ${api.recordCount} records at generation ${api.generation} saved as ${ZONE}.zone`);
      expect(callLines(h.sim)).toEqual([]);
      await shot(page, 'records-export', false);
    });

    it("records: each checked target's state (healthy, failing, withdrawn) and the set's check, as Records answers", async () => {
      // A shared set of alice and bob with a check: alice's target answers, bob's two do not.
      const live = http.createServer((_req, res) => res.writeHead(200).end());
      await new Promise<void>((resolve) => live.listen(0, '127.0.0.21', resolve));
      const check = { 'dnsplane/health-check': `http://:${(live.address() as AddressInfo).port}/healthz` };
      try {
        await h.zoneClient(tokens['alice']).apply(
          upsert([
            create(EndpointSchema, {
              dnsName: `pool.${ZONE}`,
              recordType: 'A',
              targets: ['127.0.0.21'],
              ttl: 60,
              labels: { 'dnsplane/shared': 'true', ...check },
            }),
          ]),
        );
        await h
          .zoneClient(tokens['bob'])
          .apply(upsert([create(EndpointSchema, { dnsName: `pool.${ZONE}`, recordType: 'A', targets: ['127.0.0.22', '127.0.0.23'], ttl: 60, labels: check })]));
        const checker = new HealthChecker(h.server.ctx, {
          settings: { ...DEFAULT_HEALTH, failures: 2, leaseMs: 60_000 },
          withdrawals: coreWithdrawals(h.server.ctx),
          timer: false,
          holder: 'console-test',
        });
        // Two failing rounds: one of bob's withdrawn (at most half of the set per round), the other failing.
        await checker.runRound();
        expect((await checker.runRound()).withdrawn).toHaveLength(1);
        // Away and back: the records page reads Records again.
        await open(page, 'zones', '[data-testid=zones] table');
        await open(page, `zones/${ZONE}`, '[data-testid=records] table');
        await page.fill('[data-testid=filter-name]', 'pool');
        const api = (await h.zoneClient(tokens['admin']).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints.filter(
          (e) => e.dnsName === `pool.${ZONE}`,
        );
        await expect.poll(() => rowsOf(page, 'records')).toEqual(api.map(recordRow));
        expect(api.flatMap((e) => e.targetStates.map((s) => TargetStatus[s.status])).sort()).toEqual(['FAILING', 'HEALTHY', 'WITHDRAWN']);
        expect(await page.locator('[data-testid=target-state]').first().getAttribute('title')).toMatch(/^health · since .* · passes: 200/);
        await shot(page, 'records-health', false);
        await page.fill('[data-testid=filter-name]', '');
      } finally {
        live.close();
      }
    });

    it(`a zone of ${BIG_RECORDS} records: ${100} rows in the page at a time, every one reachable, filters over all`, async () => {
      const started = Date.now();
      await open(page, `zones/${BIG}`, '[data-testid=records] table');
      const drawn = Date.now() - started;
      const api = (await h.zoneClient(tokens['admin']).records({ zones: [BIG], includeForeign: true })).zones[0]!.endpoints;
      expect(api.length).toBeGreaterThan(BIG_RECORDS);
      expect(await page.locator('[data-testid=count]').innerText()).toBe(`${api.length} record sets`);
      expect(await page.locator('[data-testid=records] tbody tr').count()).toBe(100);
      expect(await rowsOf(page, 'records')).toEqual(api.slice(0, 100).map(recordRow));
      await shot(page, 'records-5000', false);
      await page.click('[data-testid=records] [data-testid=last]');
      const lastPage = Math.ceil(api.length / 100);
      expect(await page.locator('[data-testid=records] [data-testid=range]').innerText()).toBe(
        `${(lastPage - 1) * 100 + 1}–${api.length} of ${api.length} · page ${lastPage} of ${lastPage}`,
      );
      expect(await rowsOf(page, 'records')).toEqual(api.slice((lastPage - 1) * 100).map(recordRow));
      await page.selectOption('[data-testid=filter-owner]', 'alice');
      expect(await rowsOf(page, 'records')).toEqual(api.filter((e) => ownerOf(e) === 'alice').map(recordRow));
      await page.selectOption('[data-testid=filter-owner]', '');
      await page.fill('[data-testid=filter-name]', 'h4999.');
      await expect.poll(() => rowsOf(page, 'records')).toEqual(api.filter((e) => e.dnsName.includes('h4999.')).map(recordRow));
      // The page stays responsive: a round trip through the page's event loop right after a filter.
      const t = Date.now();
      await page.fill('[data-testid=filter-name]', 'h1');
      await page.evaluate('new Promise((r) => requestAnimationFrame(() => r(null)))');
      console.log(`console: ${BIG} (${api.length} record sets) drawn in ${drawn} ms; a filter keystroke answered in ${Date.now() - t} ms`);
    });

    it('journal: each apply with its OVH calls, outcome, tenant and time; failed and recovered visible; pages', async () => {
      // The tests before this one published too: their probes final before the page is read and compared.
      await everyPublishFinal();
      await open(page, 'journal', '[data-testid=journal] table');
      const api = (await h.adminClient(tokens['admin']).listJournal({ limit: 50 })).entries;
      const rows = await rowsOf(page, 'journal');
      expect(rows.map((r) => [r[0], r[2], r[3], r[4], r[5], r[6]])).toEqual(api.map((e) => [e.id, e.zone, e.tenant, e.kind, e.state, String(e.calls.length)]));
      expect(rows.map((r) => r[1])).toEqual(
        api.map((e) =>
          new Date(Number(e.startedAt!.seconds) * 1000)
            .toISOString()
            .replace('T', ' ')
            .replace(/\.\d+Z$/, 'Z'),
        ),
      );
      expect(api.map((e) => e.state)).toEqual(expect.arrayContaining(['done', 'failed', 'recovered']));
      // Where each publish stands: visible with its delay, not visible, superseded; nothing for what published nothing.
      expect(rows.map((r) => r[8])).toEqual(api.map((e) => (e.visibility ? cell(e.visibility) : '—')));
      expect(api.map((e) => e.visibility?.state)).toEqual(
        expect.arrayContaining([VisibilityState.VISIBLE, VisibilityState.NOT_VISIBLE, VisibilityState.SUPERSEDED]),
      );
      // A visible publish's detail: per server, when it first answered and how long after publishing.
      const visible = api.find((e) => e.visibility?.state === VisibilityState.VISIBLE && e.zone === ZONE)!;
      await page.locator(`[data-testid=journal] tbody tr[data-id="${visible.id}"]`).click();
      expect(await rowsOf(page, 'servers')).toEqual(
        visible.visibility!.servers.map((sv) => [sv.server, time(sv.firstAnsweredAt), delay(visible.visibility!.publishedAt, sv.firstAnsweredAt), '—']),
      );
      await shot(page, 'journal-visible');
      await page.locator(`[data-testid=journal] tbody tr[data-id="${visible.id}"]`).click();
      // One ns1 never answered: not visible, ns1 behind on the name.
      const stuck = api.find((e) => e.visibility?.state === VisibilityState.NOT_VISIBLE && e.zone === OTHER)!;
      await page.locator(`[data-testid=journal] tbody tr[data-id="${stuck.id}"]`).click();
      const stuckRows = await rowsOf(page, 'servers');
      expect(stuckRows.map((r) => r[3])).toEqual(stuck.visibility!.servers.map((sv) => sv.behind.join(', ') || '—'));
      expect(stuckRows.map((r) => r[3])).toContain(`stuck.${OTHER} A`);
      await page.locator(`[data-testid=journal] tbody tr[data-id="${stuck.id}"]`).click();

      for (const state of ['failed', 'recovered']) {
        await page.selectOption('[data-testid=filter-state]', state);
        const filtered = (await h.adminClient(tokens['admin']).listJournal({ state })).entries;
        await expect.poll(async () => (await rowsOf(page, 'journal')).map((r) => r[0])).toEqual(filtered.map((e) => e.id));
        // Its OVH calls, as the journal holds them.
        await page.locator('[data-testid=journal] tbody tr').first().click();
        const shown = await text(page, '[data-testid=entry-detail] [data-testid=calls] .line');
        const want = filtered[0]!.calls.map(
          (c) => `${c.method} ${c.path}${c.body ? ` ${c.body}` : ''}${c.status ? ` → ${c.status}` : ''}${c.error ? ` (${c.error})` : ''}`,
        );
        expect(shown).toEqual(want);
        expect(want.length).toBeGreaterThan(0);
        if (state === 'failed') await shot(page, 'journal-failed');
      }
      await page.selectOption('[data-testid=filter-state]', '');
      await expect.poll(async () => (await rowsOf(page, 'journal')).length).toBe(api.length);
      await shot(page, 'journal');
    });

    it("plans: the stored plans as ListPlans answers, and a plan's diff line for line as `dnsplane plan` prints it", async () => {
      await open(page, 'plans', '[data-testid=plans] table');
      const api = (await h.adminClient(tokens['admin']).listPlans({ limit: 1000 })).plans;
      const rows = await rowsOf(page, 'plans');
      expect(rows.map((r) => [r[0], r[1], r[2], r[3], r[6], r[7], r[8]])).toEqual(
        api.map((p) => [p.id, p.tenant, p.requestedBy, p.status, String(p.changeCount), String(p.conflictCount), String(p.operationCount)]),
      );
      await shot(page, 'plans');
      for (const p of api) {
        await open(page, `plans/${p.id}`, '[data-testid=diff]');
        const got = (await h.adminClient(tokens['admin']).getPlan({ id: p.id })).plan!;
        expect(await diffLines(page)).toEqual(renderPlan(got, { color: false }));
      }
      await shot(page, 'plan');
    });

    it("tenants: as ListTenants answers, with each tenant's TSIG and OVH keys as ListTsigKeys and ListOvhKeys answer, and the staged OVH API writes — never a secret", async () => {
      await open(page, 'tenants', '[data-testid=tsig-keys] table');
      const api = (await h.adminClient(tokens['admin']).listTenants({})).tenants;
      const keys = (await h.adminClient(tokens['admin']).listTsigKeys({})).keys;
      const rows = await rowsOf(page, 'tenants');
      expect(rows.map((r) => [r[0], r[1], r[2], r[4], r[7]])).toEqual(
        api.map((t) => [
          t.name,
          t.scopes.join(', '),
          t.zones.length ? t.zones.join(', ') : t.scopes.includes('admin') ? 'all' : '—',
          t.disabled ? 'disabled' : 'active',
          String(keys.filter((k) => k.tenant === t.name).length),
        ]),
      );
      const time = (ts: { seconds: bigint } | undefined) =>
        ts
          ? new Date(Number(ts.seconds) * 1000)
              .toISOString()
              .replace('T', ' ')
              .replace(/\.\d+Z$/, 'Z')
          : '—';
      expect(keys).toHaveLength(2);
      expect((await rowsOf(page, 'tsig-keys')).map((r) => [r[0], r[1], r[2], r[3], r[4], r[6]])).toEqual(
        keys.map((k) => [
          k.tenant,
          `${k.name}.`,
          k.algorithm,
          k.acmeOnly ? 'acme-only' : 'tenant',
          time(k.createdAt),
          k.lastUsedAt ? time(k.lastUsedAt) : 'never',
        ]),
      );
      expect((await rowsOf(page, 'tsig-keys')).map((r) => r[6] === 'never')).toEqual([false, true]);
      // OVH keys as ListOvhKeys answers, and the write staged with one as ListOvhDrafts answers.
      const ovhKeys = (await h.adminClient(tokens['admin']).listOvhKeys({})).keys;
      expect(ovhKeys).toHaveLength(1);
      expect((await rowsOf(page, 'ovh-keys')).map((r) => [r[0], r[1], r[2], r[4], r[5]])).toEqual(
        ovhKeys.map((k) => [k.tenant, k.applicationKey, time(k.createdAt), time(k.lastUsedAt), 'never']),
      );
      expect(rows.map((r) => r[8])).toEqual(api.map((t) => String(ovhKeys.filter((k) => k.tenant === t.name).length)));
      const drafts = (await h.adminClient(tokens['admin']).listOvhDrafts({})).drafts;
      expect(drafts.map((d) => [d.tenant, d.zone, d.action, d.subDomain, d.fieldType, d.target, d.ttl])).toEqual([
        ['bob', ZONE, 'create', 'staged', 'TXT', 'not yet', 60],
      ]);
      expect((await rowsOf(page, 'ovh-drafts')).map((r) => [r[0], r[1], r[2], r[3], r[4], r[6]])).toEqual(
        drafts.map((d) => [d.tenant, d.zone, d.recordId, 'create', 'staged TXT not yet (TTL 60)', time(d.expiresAt)]),
      );
      const html = await page.content();
      for (const secret of tsigSecrets) expect(html.includes(secret)).toBe(false);
      await shot(page, 'tenants');
    });

    it("PlanAs: a dry run whose diff is the API's plan, line for line; nothing is applied", async () => {
      await open(page, 'plan-as', 'form.planas');
      const document = [
        `# bob's cluster, as external-dns would want it`,
        `- dnsName: api.${ZONE}`,
        `  recordType: CNAME`,
        `  targets: [lb.example.net]`,
        `  ttl: 300`,
        `- name: new.${ZONE}`,
        `  type: AAAA`,
        `  targets: ["2001:db8::1"]`,
        `- dnsName: www.${ZONE}`,
        `  recordType: A`,
        `  targets: [192.0.2.99]`,
        ``,
      ].join('\n');
      await page.selectOption('[data-testid=planas-tenant]', 'bob');
      await page.fill('[data-testid=planas-document]', document);
      await page.selectOption('[data-testid=planas-policy]', 'POLICY_UPSERT_ONLY');
      const journalBefore = (await h.adminClient(tokens['admin']).listJournal({ limit: 1000 })).entries.length;
      const zonesBefore = (await h.zoneClient(tokens['admin']).listZones({})).zones.map((z) => `${z.name} ${z.generation}`);
      h.sim.clearCalls();
      await page.click('[data-testid=planas-submit]');
      await page.waitForSelector('[data-testid=planas-result] [data-testid=diff]');
      const lines = await diffLines(page);
      const id = /^Plan (\S+) for tenant "bob"/.exec(lines[0]!)?.[1];
      expect(id).toBeDefined();
      // The plan the form made, as the API holds it, rendered by the CLI's renderer: the same lines.
      const stored = (await h.adminClient(tokens['admin']).getPlan({ id: id! })).plan!;
      expect(lines).toEqual(renderPlan(stored, { color: false }));
      // And the same request through the API directly plans the same changes, calls and conflicts.
      const request = (await h.adminClient(tokens['admin']).parseDesiredState({ document })).request!;
      request.policy = Policy.UPSERT_ONLY;
      const direct = (await h.adminClient(tokens['admin']).planAs({ tenant: 'bob', request })).plan!;
      expect(renderPlan(direct, { color: false }).slice(1, -1)).toEqual(lines.slice(1, -1));
      expect(lines.some((l) => l.startsWith('  ~ api.console.test CNAME'))).toBe(true);
      expect(lines.some((l) => l.startsWith('  ! www.console.test A'))).toBe(true);
      expect(lines).toContain(`      POST /domain/zone/${ZONE}/record {"fieldType":"AAAA","subDomain":"new","target":"2001:db8::1","ttl":0}`);
      // A dry run: no OVH call at all, no journal row, no zone changed.
      expect(callLines(h.sim)).toEqual([]);
      expect((await h.adminClient(tokens['admin']).listJournal({ limit: 1000 })).entries.length).toBe(journalBefore);
      expect((await h.zoneClient(tokens['admin']).listZones({})).zones.map((z) => `${z.name} ${z.generation}`)).toEqual(zonesBefore);
      await shot(page, 'plan-as');

      // A bad document: the error names the field.
      await page.fill('[data-testid=planas-document]', '[{dnsName: x.console.test, recordType: A, targets: [192.0.2.1], ttl: -1}]');
      await page.click('[data-testid=planas-submit]');
      await expect
        .poll(() => page.locator('[data-testid=planas-result] [data-testid=error]').innerText())
        .toBe('invalid_argument: document: [0].ttl: must be a whole number of seconds, 0 or more (got -1)');
    });

    it('a plan of hundreds of changes: a page of 500 lines at a time, every line as the CLI prints it', async () => {
      const n = 600;
      const document = JSON.stringify({
        policy: 'upsert-only',
        endpoints: Array.from({ length: n }, (_, i) => ({ dnsName: `n${i}.${BIG}`, recordType: 'A', targets: [`192.0.2.${(i % 250) + 1}`] })),
      });
      await open(page, 'plan-as', 'form.planas');
      await page.selectOption('[data-testid=planas-tenant]', 'alice');
      await page.fill('[data-testid=planas-document]', document);
      await page.click('[data-testid=planas-submit]');
      await page.waitForSelector('[data-testid=planas-result] [data-testid=diff]', { timeout: 120_000 });
      const id = /^Plan (\S+) for tenant "alice"/.exec((await diffLines(page))[0]!)?.[1];
      const want = renderPlan((await h.adminClient(tokens['admin']).getPlan({ id: id! })).plan!, { color: false });
      expect(want.length).toBeGreaterThan(2 * n);
      expect(await page.locator('[data-testid=diff] .line').count()).toBe(500);
      const got: string[] = [];
      const next = page.locator('[data-testid=diff] .pager button').last();
      for (;;) {
        got.push(...(await diffLines(page)));
        if (await next.isDisabled()) break;
        await next.click();
      }
      expect(got).toEqual(want);
    }, 180_000);
  });

  describe("the console writes (an admin's): each through a confirm step, checked through the API", () => {
    let page: Page;
    const CAROL = 'carol';
    /** Secrets the page showed: never in a URL, storage, a cookie or a log. */
    const shown: string[] = [];
    const admin = () => h.adminClient(tokens['admin']);
    const journalLength = async () => (await admin().listJournal({ limit: 1000 })).entries.length;
    const tenantOf = async (name: string) => (await admin().listTenants({})).tenants.find((t) => t.name === name);
    const dialog = (testid: string) => page.locator(`[data-testid=${testid}]`);
    const rowOf = (table: string, attr: string, value: string) => page.locator(`[data-testid=${table}] tbody tr[${attr}="${value}"]`);
    /** The text of a dialog's "This will" paragraph, once it is at the confirm step. */
    const willText = async (testid: string) => {
      await dialog(testid).locator('[data-testid=confirm]').waitFor();
      return dialog(testid).locator('p.will').innerText();
    };
    /** Confirms, and waits for the answer (the result, then the view redrawn) or the error. */
    async function confirm(testid: string): Promise<void> {
      await dialog(testid).locator('[data-testid=confirm]').click();
      await dialog(testid).locator('[data-testid=close], [data-testid=error]').first().waitFor();
    }
    async function closeDialog(testid: string): Promise<void> {
      await dialog(testid).locator('[data-testid=close]').click();
      await expect.poll(() => page.locator('[data-testid=overlay]').count()).toBe(0);
    }
    /** What an API call refuses, as the console prints it (code: message). */
    async function refusal(p: Promise<unknown>): Promise<string> {
      const e = await p.then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(ConnectError);
      return `${Code[(e as ConnectError).code]!.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase()}: ${(e as ConnectError).rawMessage}`;
    }
    /** A tenant token's answer from ZoneService.ListZones: its name, or the refusal. */
    const whoIs = (token: string) =>
      h
        .zoneClient(token)
        .listZones({})
        .then(
          (r) => r.tenant,
          (e: unknown) => (e instanceof ConnectError ? Code[e.code] : String(e)),
        );
    /** A SOA query for the zone signed with the key, to the DNS door: NOERROR when the key is known, NOTAUTH when not. */
    async function signedSoa(name: string, algorithm: TsigAlgorithm, secret: string): Promise<number> {
      const answer = await udpExchange(h.server.dns!.port, query(ZONE, TYPE.SOA, { key: { name, algorithm, secret: Buffer.from(secret, 'base64') } }));
      return answer!.parsed.message.header.rcode;
    }
    const ovhStatus = async (k: { applicationKey: string; applicationSecret: string; consumerKey: string }) =>
      (await ovhCall(`${h.server.url}/ovh/1.0`, k, 'GET', `/domain/zone/${ZONE}`)).status;

    beforeAll(async () => {
      page = await newPage();
      await signIn(page, tokens['admin']!);
    });
    afterAll(async () => {
      await page?.context().close();
      for (const s of shown) {
        expect(requested.filter((u) => u.includes(s))).toEqual([]);
        expect(logLines.filter((l) => l.includes(s))).toEqual([]);
      }
    });

    it('creates a tenant: a bad name refused with the field and the rule, a cancel that writes nothing, then the token shown once, which works', async () => {
      await open(page, 'tenants', '[data-testid=tenants] table');
      await page.click('[data-testid=new-tenant]');
      await page.fill('[data-testid=nt-name]', 'Carol The Great');
      await page.fill('[data-testid=nt-zones]', ZONE);
      await page.click('[data-testid=dialog-create-tenant] [data-testid=review]');
      expect(await willText('dialog-create-tenant')).toBe(
        `This will: create tenant "Carol The Great", for the zones ${ZONE}. Its bearer token is shown once, here, after it is created.`,
      );
      expect(JSON.parse((await dialog('dialog-create-tenant').locator('[data-testid=request]').textContent()) ?? '')).toEqual({
        name: 'Carol The Great',
        zones: [ZONE],
        suffixes: [],
        scopes: [],
      });
      const journalBefore = await journalLength();
      await confirm('dialog-create-tenant');
      const error = await dialog('dialog-create-tenant').locator('[data-testid=error]').innerText();
      expect(error).toBe(await refusal(admin().createTenant({ name: 'Carol The Great', zones: [ZONE] })));
      expect(error).toBe('invalid_argument: name: must be 1-63 characters of a-z, 0-9 and "-", starting with a letter or digit');
      await shot(page, 'write-error', false);
      // Back to the form, a good name, and Cancel at the confirm step: nothing written.
      await dialog('dialog-create-tenant').locator('[data-testid=back]').click();
      await page.fill('[data-testid=nt-name]', CAROL);
      await page.fill('[data-testid=nt-suffixes]', `carol.${ZONE}`);
      await page.click('[data-testid=dialog-create-tenant] [data-testid=review]');
      expect(await willText('dialog-create-tenant')).toBe(
        `This will: create tenant "${CAROL}", for the zones ${ZONE}, writing only under carol.${ZONE}. Its bearer token is shown once, here, after it is created.`,
      );
      await dialog('dialog-create-tenant').locator('[data-testid=cancel]').click();
      await expect.poll(() => page.locator('[data-testid=overlay]').count()).toBe(0);
      expect(await tenantOf(CAROL)).toBeUndefined();
      expect(await journalLength()).toBe(journalBefore);
      // Escape cancels too.
      await page.click('[data-testid=new-tenant]');
      await page.keyboard.press('Escape');
      await expect.poll(() => page.locator('[data-testid=overlay]').count()).toBe(0);

      // Now for real.
      await page.click('[data-testid=new-tenant]');
      await page.fill('[data-testid=nt-name]', CAROL);
      await page.fill('[data-testid=nt-zones]', ZONE);
      await page.fill('[data-testid=nt-suffixes]', `carol.${ZONE}`);
      await shot(page, 'write-create-tenant-form', false);
      await page.click('[data-testid=dialog-create-tenant] [data-testid=review]');
      await willText('dialog-create-tenant');
      await shot(page, 'write-create-tenant-confirm', false);
      await confirm('dialog-create-tenant');
      const token = await dialog('dialog-create-tenant').locator('[data-testid=secret-token]').innerText();
      expect(token).toMatch(/^dnsp_/);
      shown.push(token);
      tokens['carol'] = token;
      await shot(page, 'write-create-tenant-token', false);
      // The token shown is the one that authenticates, as the tenant created.
      const api = await h.zoneClient(token).listZones({});
      expect([api.tenant, api.scopes]).toEqual([CAROL, []]);
      expect(await tenantOf(CAROL)).toMatchObject({ name: CAROL, zones: [ZONE], suffixes: [`carol.${ZONE}`], scopes: [], disabled: false });
      // The view was redrawn behind the dialog; the token is in the page only, nowhere else.
      await rowOf('tenants', 'data-tenant', CAROL).waitFor();
      expect(
        await page.evaluate(
          `[sessionStorage.length, sessionStorage.getItem("dnsplane.token") === ${JSON.stringify(tokens['admin'])}, localStorage.length, document.cookie, location.href]`,
        ),
      ).toEqual([1, true, 0, '', `${ui()}#/tenants`]);
      await closeDialog('dialog-create-tenant');
      expect((await page.content()).includes(token)).toBe(false);
    });

    it('rotates a token: without grace the old one fails at once, with 10 min it keeps working and the page says until when', async () => {
      await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${CAROL}"]`);
      const old = tokens['carol']!;
      await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=rotate-token]').click();
      expect(await page.locator('[data-testid=rt-grace] option').allInnerTexts()).toEqual(['none — the old token stops at once', '10 min', '1 h', '1 day']);
      await page.click('[data-testid=dialog-rotate-token] [data-testid=review]');
      expect(await willText('dialog-rotate-token')).toBe(
        `This will: issue a new bearer token for tenant "${CAROL}"; the old token stops working at once. The new token is shown once, here.`,
      );
      await confirm('dialog-rotate-token');
      const fresh = await dialog('dialog-rotate-token').locator('[data-testid=secret-token]').innerText();
      shown.push(fresh);
      expect(await dialog('dialog-rotate-token').locator('[data-testid=issued] p').first().innerText()).toBe(
        `Rotated the token of "${CAROL}"; the old token no longer works. The new bearer token:`,
      );
      expect(await whoIs(old)).toBe('Unauthenticated');
      expect(await whoIs(fresh)).toBe(CAROL);
      await closeDialog('dialog-rotate-token');

      // With a grace of 10 minutes.
      await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=rotate-token]').click();
      await page.selectOption('[data-testid=rt-grace]', '600');
      await page.click('[data-testid=dialog-rotate-token] [data-testid=review]');
      expect(await willText('dialog-rotate-token')).toBe(
        `This will: issue a new bearer token for tenant "${CAROL}"; the old token stays valid for 10 min more, then stops. The new token is shown once, here.`,
      );
      await shot(page, 'write-rotate-token-confirm', false);
      await confirm('dialog-rotate-token');
      const third = await dialog('dialog-rotate-token').locator('[data-testid=secret-token]').innerText();
      shown.push(third);
      tokens['carol'] = third;
      const t = (await tenantOf(CAROL))!;
      expect(t.previousTokenValidUntil).toBeDefined();
      expect(Number(t.previousTokenValidUntil!.seconds) * 1000 - Date.now()).toBeGreaterThan(5 * 60_000);
      expect(await whoIs(fresh)).toBe(CAROL);
      expect(await whoIs(third)).toBe(CAROL);
      expect(await dialog('dialog-rotate-token').locator('[data-testid=issued] p').first().innerText()).toBe(
        `Rotated the token of "${CAROL}"; the old token still works until ${time(t.previousTokenValidUntil)}. The new bearer token:`,
      );
      await closeDialog('dialog-rotate-token');
      expect(await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=old-token]').innerText()).toBe(
        `old token valid until ${time(t.previousTokenValidUntil)}`,
      );
    });

    it("sets the change threshold (a value out of range refused with the rule), and back to the server's default", async () => {
      await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${CAROL}"]`);
      const set = async (value: string) => {
        await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=set-threshold]').click();
        await page.fill('[data-testid=th-percent]', value);
        await page.click('[data-testid=dialog-threshold] [data-testid=review]');
      };
      await set('150');
      expect(await willText('dialog-threshold')).toBe(`This will: set tenant "${CAROL}"'s change threshold to 150% (now: server default).`);
      await confirm('dialog-threshold');
      expect(await dialog('dialog-threshold').locator('[data-testid=error]').innerText()).toBe(
        await refusal(admin().setTenantMaxChangePercent({ name: CAROL, maxChangePercent: 150 })),
      );
      expect((await tenantOf(CAROL))!.maxChangePercent).toBeUndefined();
      await dialog('dialog-threshold').locator('[data-testid=cancel]').click();
      // Not a number: said by the page, before any call.
      await set('ten');
      expect(await dialog('dialog-threshold').locator('[data-testid=error]').innerText()).toBe(
        'maxChangePercent: must be a whole number 0-100, or empty for the server\'s default (got "ten")',
      );
      await page.fill('[data-testid=th-percent]', '25');
      await page.click('[data-testid=dialog-threshold] [data-testid=review]');
      await willText('dialog-threshold');
      await confirm('dialog-threshold');
      expect((await tenantOf(CAROL))!.maxChangePercent).toBe(25);
      await closeDialog('dialog-threshold');
      expect((await rowsOf(page, 'tenants')).find((r) => r[0] === CAROL)![9]).toBe('25%');
      await set('');
      expect(await willText('dialog-threshold')).toBe(
        `This will: set tenant "${CAROL}"'s change threshold to the server's default (DNSPLANE_MAX_CHANGE_PERCENT) (now: 25%).`,
      );
      await confirm('dialog-threshold');
      expect((await tenantOf(CAROL))!.maxChangePercent).toBeUndefined();
      await closeDialog('dialog-threshold');
      expect((await rowsOf(page, 'tenants')).find((r) => r[0] === CAROL)![9]).toBe('server default');
    });

    it("sets a tenant's withdraw-after (a bad duration said by the page, before any call), and turns it off", async () => {
      await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${CAROL}"]`);
      const set = async (value: string) => {
        await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=set-withdraw-after]').click();
        await page.fill('[data-testid=wa-duration]', value);
        await page.click('[data-testid=dialog-withdraw-after] [data-testid=review]');
      };
      await set('soon');
      expect(await dialog('dialog-withdraw-after').locator('[data-testid=error]').innerText()).toBe(
        'withdrawAfter: must be a duration like 30s, 5m or 1h (whole seconds), or empty/off (got "soon")',
      );
      await page.fill('[data-testid=wa-duration]', '5m');
      await page.click('[data-testid=dialog-withdraw-after] [data-testid=review]');
      expect(await willText('dialog-withdraw-after')).toBe(
        `This will: withdraw tenant "${CAROL}"'s targets of shared record sets after 5m without a call (now: off).`,
      );
      await shot(page, 'tenant-withdraw-after', false);
      await confirm('dialog-withdraw-after');
      expect((await tenantOf(CAROL))!.withdrawAfter?.seconds).toBe(300n);
      await closeDialog('dialog-withdraw-after');
      const row = (await rowsOf(page, 'tenants')).find((r) => r[0] === CAROL)!;
      expect(row[10]).toMatch(/^5m\s+(last seen |never seen)/);
      // Out of range: the server's refusal, word for word.
      await set('31000000s');
      await confirm('dialog-withdraw-after');
      expect(await dialog('dialog-withdraw-after').locator('[data-testid=error]').innerText()).toBe(
        await refusal(admin().setTenantWithdrawAfter({ name: CAROL, withdrawAfter: { seconds: 31_000_000n, nanos: 0 } })),
      );
      await dialog('dialog-withdraw-after').locator('[data-testid=cancel]').click();
      await set('off');
      expect(await willText('dialog-withdraw-after')).toBe(
        `This will: turn off withdrawal for silence for tenant "${CAROL}" (now: 5m); what was withdrawn for its silence is restored.`,
      );
      await confirm('dialog-withdraw-after');
      expect((await tenantOf(CAROL))!.withdrawAfter).toBeUndefined();
      await closeDialog('dialog-withdraw-after');
      expect((await rowsOf(page, 'tenants')).find((r) => r[0] === CAROL)![10]).toMatch(/^off/);
    });

    it("disables a tenant (its token refused) and enables it again; disabling one's own tenant warns first", async () => {
      await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${CAROL}"]`);
      await rowOf('tenants', 'data-tenant', 'admin').locator('[data-testid=disable-tenant]').click();
      expect(await willText('dialog-disable-tenant')).toMatch(/This is the tenant you are signed in as: the console will sign you out\.$/);
      await dialog('dialog-disable-tenant').locator('[data-testid=cancel]').click();
      expect((await tenantOf('admin'))!.disabled).toBe(false);
      await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=disable-tenant]').click();
      expect(await willText('dialog-disable-tenant')).toBe(
        `This will: disable tenant "${CAROL}": every call with its token fails authentication, at once; its records and their ownership stay.`,
      );
      await shot(page, 'write-disable-confirm', false);
      await confirm('dialog-disable-tenant');
      expect((await tenantOf(CAROL))!.disabled).toBe(true);
      expect(await whoIs(tokens['carol']!)).toBe('Unauthenticated');
      await closeDialog('dialog-disable-tenant');
      expect((await rowsOf(page, 'tenants')).find((r) => r[0] === CAROL)![4]).toBe('disabled');
      await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=disable-tenant]').click();
      expect(await willText('dialog-disable-tenant')).toBe(`This will: enable tenant "${CAROL}": its token works again.`);
      await confirm('dialog-disable-tenant');
      expect(await whoIs(tokens['carol']!)).toBe(CAROL);
      await closeDialog('dialog-disable-tenant');
      expect((await rowsOf(page, 'tenants')).find((r) => r[0] === CAROL)![4]).toBe('active');
    });

    it('hands over what a tenant owns (issue 46): a refusal names the field and the rule, then everything moves with no OVH call', async () => {
      const blue = await h.tenant('ho-blue', [ZONE]);
      await h.tenant('ho-green', [ZONE]);
      await h.zoneClient(blue).apply({
        source: {
          case: 'plan',
          value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`ho.${ZONE}`, 'A', ['192.0.2.77'])] } } },
        },
      });
      const ownerOfHo = async () =>
        (await h.adminClient(tokens['admin']).listOwnership({ zone: ZONE })).entries.find((e) => e.dnsName === `ho.${ZONE}`)?.tenant;
      // Away and back: the page reads the tenants made just now.
      await open(page, 'zones', '[data-testid=zones] table');
      await open(page, 'tenants', '[data-testid=tenants] tr[data-tenant="ho-blue"]');
      await rowOf('tenants', 'data-tenant', 'ho-blue').locator('[data-testid=handover-tenant]').click();
      await page.fill('[data-testid=ho-new]', 'ho-blue');
      await page.click('[data-testid=dialog-handover] [data-testid=review]');
      await confirm('dialog-handover');
      expect(await dialog('dialog-handover').locator('[data-testid=error]').innerText()).toBe(
        'invalid_argument: new: must be another tenant than old ("ho-blue")',
      );
      expect(await ownerOfHo()).toBe('ho-blue');
      await page.keyboard.press('Escape');
      await expect.poll(() => page.locator('[data-testid=overlay]').count()).toBe(0);
      h.sim.clearCalls();
      await rowOf('tenants', 'data-tenant', 'ho-blue').locator('[data-testid=handover-tenant]').click();
      await page.fill('[data-testid=ho-new]', 'ho-green');
      await page.click('[data-testid=dialog-handover] [data-testid=review]');
      expect(await willText('dialog-handover')).toMatch(/^This will: make tenant "ho-green" the owner of everything tenant "ho-blue" owns/);
      await confirm('dialog-handover');
      expect(await dialog('dialog-handover').locator('[data-testid=handover-result]').innerText()).toMatch(
        /^Handed over 1 ownership row\(s\) to "ho-green" \(no OVH call\); journal entry \d+\.$/,
      );
      expect(await ownerOfHo()).toBe('ho-green');
      expect(callLines(h.sim).filter((l) => !l.startsWith('GET '))).toEqual([]);
      await closeDialog('dialog-handover');
    });

    it('workload identities: a subject trusted through the dialog (its token then acts as the tenant), listed with its last call, untrusted (refused again)', async () => {
      const issuer = await startIssuer();
      try {
        const sub = 'system:serviceaccount:carol:external-dns';
        await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${CAROL}"]`);
        await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=trust-subject]').click();
        await page.fill('[data-testid=tr-issuer]', 'http://not-https.example');
        await page.fill('[data-testid=tr-subject]', sub);
        await page.click('[data-testid=dialog-trust-subject] [data-testid=review]');
        await confirm('dialog-trust-subject');
        expect(await dialog('dialog-trust-subject').locator('[data-testid=error]').innerText()).toBe(
          await refusal(admin().trustSubject({ tenant: CAROL, issuer: 'http://not-https.example', subject: sub })),
        );
        await dialog('dialog-trust-subject').locator('[data-testid=cancel]').click();
        await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=trust-subject]').click();
        await page.fill('[data-testid=tr-issuer]', issuer.url);
        await page.fill('[data-testid=tr-subject]', sub);
        await page.fill('[data-testid=tr-ca]', issuer.caPem);
        await page.click('[data-testid=dialog-trust-subject] [data-testid=review]');
        expect(await willText('dialog-trust-subject')).toBe(
          `This will: let tokens that ${issuer.url} signs for ${sub} with the audience "dnsplane" act as tenant "${CAROL}"; the issuer's keys from its discovery document (unless set before), for every tenant trusting that issuer.`,
        );
        await shot(page, 'tenant-trust', false);
        await confirm('dialog-trust-subject');
        expect(await dialog('dialog-trust-subject').locator('[data-testid=trusted]').innerText()).toBe(`Tenant "${CAROL}" trusts ${sub}; keys: discovery.`);
        await closeDialog('dialog-trust-subject');
        expect(await whoIs(await issuer.mint({ sub }))).toBe(CAROL);
        // Its call is written as its last seen (the first one at once), then the page drawn again shows it.
        await expect
          .poll(async () => (await admin().listTrustedSubjects({ tenant: CAROL })).subjects[0]?.lastSeenAt !== undefined, { timeout: 60_000 })
          .toBe(true);
        await open(page, 'zones', 'table');
        await open(page, 'tenants', '[data-testid=trusted-subjects] table');
        expect((await rowsOf(page, 'trusted-subjects')).find((r) => r[1] === sub)?.[6]).toMatch(/^\d{4}-\d\d-\d\d /);
        const listed = (await admin().listTrustedSubjects({ tenant: CAROL })).subjects;
        expect((await rowsOf(page, 'trusted-subjects')).filter((r) => r[0] === CAROL).map((r) => r.slice(0, 5))).toEqual(
          listed.map((t) => [t.tenant, t.subject, t.issuer, t.audience, t.keys]),
        );
        await shot(page, 'tenants-workloads');
        await rowOf('trusted-subjects', 'data-subject', sub).locator('[data-testid=untrust-subject]').click();
        expect(await willText('dialog-untrust-subject')).toBe(
          `This will: stop tokens of ${sub} (issuer ${issuer.url}) acting as tenant "${CAROL}": refused at once, on every replica.`,
        );
        await confirm('dialog-untrust-subject');
        await closeDialog('dialog-untrust-subject');
        expect(await whoIs(await issuer.mint({ sub }))).toBe('Unauthenticated');
        // The view is drawn again after the answer: the row goes then.
        await expect.poll(() => page.locator(`[data-testid=trusted-subjects] tbody tr[data-subject="${sub}"]`).count()).toBe(0);
      } finally {
        await issuer.close();
      }
    });

    it("TSIG keys: created (the secret shown signs queries; the configurations are the CLI's), rotated (the old secret refused), deleted (refused)", async () => {
      await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${CAROL}"]`);
      const name = 'ci.carol.dnsplane';
      await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=new-tsig-key]').click();
      await page.fill('[data-testid=tk-name]', `CI.Carol.dnsplane.`);
      await page.selectOption('[data-testid=tk-algorithm]', 'hmac-sha512');
      await page.fill('[data-testid=tk-server]', 'dns.example.net:5353');
      await page.click('[data-testid=dialog-create-tsig] [data-testid=review]');
      expect(await willText('dialog-create-tsig')).toBe(
        `This will: create a TSIG key "CI.Carol.dnsplane." (hmac-sha512) that acts as tenant "${CAROL}" in DNS UPDATE, signed queries and zone transfers. Its secret is shown once, here.`,
      );
      await confirm('dialog-create-tsig');
      const secret = await dialog('dialog-create-tsig').locator('[data-testid=secret-tsig]').innerText();
      shown.push(secret);
      const key = (await admin().listTsigKeys({ tenant: CAROL })).keys;
      expect(key.map((k) => [k.name, k.algorithm, k.acmeOnly])).toEqual([[name, 'hmac-sha512', false]]);
      expect(await signedSoa(name, 'hmac-sha512', secret)).toBe(RCODE.NOERROR);
      // The configurations shown are the CLI's for this key and server.
      const cli = tsigConfigs(
        { name, algorithm: 'hmac-sha512', secret, tenant: CAROL, zones: [ZONE], acmeOnly: false },
        { host: 'dns.example.net', port: 5353, source: 'the console' },
      );
      for (const [tool, c] of Object.entries(cli)) {
        const block = dialog('dialog-create-tsig').locator(`[data-testid=tsig-configs] [data-tool=${tool}]`);
        if (c.text !== undefined) expect(await block.locator(`[data-testid=config-${tool}]`).textContent()).toBe(c.text);
        else expect(await block.locator('p').textContent()).toBe(`(not for this key: ${c.unsupported})`);
      }
      expect(await dialog('dialog-create-tsig').locator('[data-testid=config-note]').innerText()).toBe('DNS server: dns.example.net:5353 (from the console).');
      // Copy puts the exact text on the clipboard (127.0.0.1 is a secure context).
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.server.url });
      await dialog('dialog-create-tsig').locator('[data-testid=copy-secret-tsig]').click();
      await expect.poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(secret);
      await dialog('dialog-create-tsig').locator('[data-testid=copy-config-certManager]').click();
      await expect.poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(cli.certManager.text);
      await page.evaluate('navigator.clipboard.writeText("")');
      await shot(page, 'write-tsig-created', false);
      await closeDialog('dialog-create-tsig');
      await rowOf('tsig-keys', 'data-key', name).waitFor();
      expect((await page.content()).includes(secret)).toBe(false);

      await rowOf('tsig-keys', 'data-key', name).locator('[data-testid=rotate-tsig-key]').click();
      await page.click('[data-testid=dialog-rotate-tsig] [data-testid=review]');
      expect(await willText('dialog-rotate-tsig')).toBe(
        `This will: issue a new secret for TSIG key "${name}." (same name, algorithm and scope); the old secret stops working at once, on every replica. The new secret is shown once, here.`,
      );
      await confirm('dialog-rotate-tsig');
      const rotated = await dialog('dialog-rotate-tsig').locator('[data-testid=secret-tsig]').innerText();
      shown.push(rotated);
      expect(rotated).not.toBe(secret);
      // No server given: the placeholder, and the note says so.
      expect(await dialog('dialog-rotate-tsig').locator('[data-testid=config-note]').innerText()).toMatch(
        /^The DNS server below is a placeholder \(REPLACE_ME_DNS_HOST:53\)/,
      );
      expect(await dialog('dialog-rotate-tsig').locator('[data-testid=config-nsupdate]').textContent()).toBe(
        tsigConfigs(
          { name, algorithm: 'hmac-sha512', secret: rotated, tenant: CAROL, zones: [ZONE], acmeOnly: false },
          { host: 'REPLACE_ME_DNS_HOST', port: 53, source: 'placeholder' },
        ).nsupdate.text,
      );
      await until(
        'the old secret refused, the new one accepted',
        async () => (await signedSoa(name, 'hmac-sha512', secret)) === RCODE.NOTAUTH && (await signedSoa(name, 'hmac-sha512', rotated)) === RCODE.NOERROR,
      );
      await closeDialog('dialog-rotate-tsig');

      // Rotated again with a grace: both secrets sign until it ends; the listing shows until when.
      await rowOf('tsig-keys', 'data-key', name).locator('[data-testid=rotate-tsig-key]').click();
      await page.selectOption('[data-testid=rk-grace]', '600');
      await page.click('[data-testid=dialog-rotate-tsig] [data-testid=review]');
      expect(await willText('dialog-rotate-tsig')).toBe(
        `This will: issue a new secret for TSIG key "${name}." (same name, algorithm and scope); the old secret stays valid for 10 min more, then stops, on every replica. The new secret is shown once, here.`,
      );
      await confirm('dialog-rotate-tsig');
      const graced = await dialog('dialog-rotate-tsig').locator('[data-testid=secret-tsig]').innerText();
      shown.push(graced);
      const until10 = (await admin().listTsigKeys({ tenant: CAROL })).keys[0]!.oldSecretValidUntil!;
      expect(await dialog('dialog-rotate-tsig').locator('[data-testid=issued] p').first().innerText()).toMatch(
        /; the old secret still works until \d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?.*\. Its secret \(base64\):$/,
      );
      expect([await signedSoa(name, 'hmac-sha512', rotated), await signedSoa(name, 'hmac-sha512', graced)]).toEqual([RCODE.NOERROR, RCODE.NOERROR]);
      await closeDialog('dialog-rotate-tsig');
      expect(await rowOf('tsig-keys', 'data-key', name).locator('[data-testid=old-secret]').innerText()).toMatch(/^old secret valid until \d{4}-/);
      expect(Number(until10.seconds) * 1000).toBeGreaterThan(Date.now() + 590_000);
      await shot(page, 'tsig-key-grace');

      await rowOf('tsig-keys', 'data-key', name).locator('[data-testid=delete-tsig-key]').click();
      expect(await willText('dialog-delete-tsig')).toBe(
        `This will: delete TSIG key "${name}." of tenant "${CAROL}": every client signing with it is refused, at once, on every replica.`,
      );
      expect(await dialog('dialog-delete-tsig').locator('[data-testid=confirm]').getAttribute('class')).toBe('danger');
      await shot(page, 'write-tsig-delete-confirm', false);
      await confirm('dialog-delete-tsig');
      expect((await admin().listTsigKeys({ tenant: CAROL })).keys).toEqual([]);
      await until(
        'the deleted key refused, with either secret',
        async () => (await signedSoa(name, 'hmac-sha512', rotated)) === RCODE.NOTAUTH && (await signedSoa(name, 'hmac-sha512', graced)) === RCODE.NOTAUTH,
      );
      await closeDialog('dialog-delete-tsig');
      expect(await rowOf('tsig-keys', 'data-key', name).count()).toBe(0);
    });

    it("OVH keys: created (the keys shown call the served OVH API; the configurations are the CLI's), rotated (the old ones refused), deleted (refused)", async () => {
      await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${CAROL}"]`);
      const before = new Set((await admin().listOvhKeys({})).keys.map((k) => k.applicationKey));
      await rowOf('tenants', 'data-tenant', CAROL).locator('[data-testid=new-ovh-key]').click();
      await page.selectOption('[data-testid=ok-expiry]', { label: '30 days' });
      expect(await page.inputValue('[data-testid=ok-endpoint]')).toBe(`${h.server.url}/ovh/1.0`);
      await page.click('[data-testid=dialog-create-ovh] [data-testid=review]');
      expect(await willText('dialog-create-ovh')).toBe(
        `This will: create an OVH key (application key, secret, consumer key) that acts as tenant "${CAROL}" against the OVH API dnsplane serves; it expires in 30 days. The secret and the consumer key are shown once, here.`,
      );
      await confirm('dialog-create-ovh');
      const read = async (testid: string) => ({
        applicationKey: await dialog(testid).locator('[data-testid=issued-application-key]').innerText(),
        applicationSecret: await dialog(testid).locator('[data-testid=secret-application-secret]').innerText(),
        consumerKey: await dialog(testid).locator('[data-testid=secret-consumer-key]').innerText(),
      });
      const k1 = await read('dialog-create-ovh');
      shown.push(k1.applicationSecret, k1.consumerKey);
      const listed = (await admin().listOvhKeys({})).keys.filter((k) => !before.has(k.applicationKey));
      expect(listed.map((k) => [k.applicationKey, k.tenant])).toEqual([[k1.applicationKey, CAROL]]);
      expect(Number(listed[0]!.expiresAt!.seconds) - Number(listed[0]!.createdAt!.seconds)).toBe(30 * 86400);
      expect(await ovhStatus(k1)).toBe(200);
      const cli = ovhKeyConfigs({ ...k1, tenant: CAROL, zones: [ZONE] }, { url: `${h.server.url}/ovh/1.0`, source: 'the console' });
      for (const [tool, text] of Object.entries(cli))
        expect(await dialog('dialog-create-ovh').locator(`[data-testid=config-${tool}]`).textContent()).toBe(text);
      await shot(page, 'write-ovh-created', false);
      await closeDialog('dialog-create-ovh');

      await rowOf('ovh-keys', 'data-key', k1.applicationKey).locator('[data-testid=rotate-ovh-key]').click();
      await page.click('[data-testid=dialog-rotate-ovh] [data-testid=review]');
      await willText('dialog-rotate-ovh');
      await confirm('dialog-rotate-ovh');
      const k2 = await read('dialog-rotate-ovh');
      shown.push(k2.applicationSecret, k2.consumerKey);
      expect(k2.applicationKey).toBe(k1.applicationKey);
      await until('the old keys refused, the new ones accepted', async () => (await ovhStatus(k1)) !== 200 && (await ovhStatus(k2)) === 200);
      await closeDialog('dialog-rotate-ovh');

      // Rotated again with a grace: the old keys keep working until it ends; the listing shows until when.
      await rowOf('ovh-keys', 'data-key', k1.applicationKey).locator('[data-testid=rotate-ovh-key]').click();
      await page.selectOption('[data-testid=ro-grace]', '3600');
      await page.click('[data-testid=dialog-rotate-ovh] [data-testid=review]');
      expect(await willText('dialog-rotate-ovh')).toBe(
        `This will: issue a new application secret and consumer key for OVH key ${k1.applicationKey} of tenant "${CAROL}" (same application key, same expiry); the old ones stay valid for 1 h more, then stop, on every replica. They are shown once, here.`,
      );
      await confirm('dialog-rotate-ovh');
      const k3 = await read('dialog-rotate-ovh');
      shown.push(k3.applicationSecret, k3.consumerKey);
      expect(await dialog('dialog-rotate-ovh').locator('[data-testid=issued] p').first().innerText()).toMatch(
        /; the old secret and consumer key still work until \d{4}-/,
      );
      expect([await ovhStatus(k2), await ovhStatus(k3)]).toEqual([200, 200]);
      await closeDialog('dialog-rotate-ovh');
      expect(await rowOf('ovh-keys', 'data-key', k1.applicationKey).locator('[data-testid=old-secret]').innerText()).toMatch(/^old secret valid until \d{4}-/);

      await rowOf('ovh-keys', 'data-key', k1.applicationKey).locator('[data-testid=delete-ovh-key]').click();
      expect(await willText('dialog-delete-ovh')).toBe(
        `This will: delete OVH key ${k1.applicationKey} of tenant "${CAROL}": every tool calling with it is refused, at once, on every replica.`,
      );
      await confirm('dialog-delete-ovh');
      expect((await admin().listOvhKeys({ tenant: CAROL })).keys).toEqual([]);
      await until('the deleted key refused, old and new', async () => (await ovhStatus(k2)) !== 200 && (await ovhStatus(k3)) !== 200);
      await closeDialog('dialog-delete-ovh');
      expect(await rowOf('ovh-keys', 'data-key', k1.applicationKey).count()).toBe(0);
      await page.evaluate('window.scrollTo(0, 0)');
      await shot(page, 'tenants-after-writes');
    });

    it('OVH accounts: one added through the dialog (credentials OVH refuses: its reason, nothing stored), listed with its zone and state, disabled and enabled — never a secret on the page', async () => {
      const STAGING = 'staging-console.test';
      h.sim.addZone(STAGING);
      const creds = h.sim.credentials;
      const credentialsText = (consumerKey: string) =>
        `OVH_APPLICATION_KEY=${creds.applicationKey}\nOVH_APPLICATION_SECRET=${creds.applicationSecret}\nOVH_CONSUMER_KEY=${consumerKey}\n`;
      const accounts = async () => (await admin().listOvhAccounts({})).accounts;
      await open(page, 'zones', '[data-testid=accounts-link]');
      await page.click('[data-testid=accounts-link]');
      await page.waitForSelector('section.page[data-page="accounts"] [data-testid=accounts-view] > *');
      const fill = async (consumerKey: string) => {
        await page.fill('[data-testid=ac-name]', 'staging');
        await page.fill('[data-testid=ac-endpoint]', h.sim.apiUrl);
        await page.fill('[data-testid=ac-zones]', STAGING);
        await page.fill('[data-testid=ac-credentials]', credentialsText(consumerKey));
        await page.click('[data-testid=dialog-add-account] [data-testid=review]');
      };
      await page.click('[data-testid=new-account]');
      await fill('WrongConsumerKey0000');
      expect(await willText('dialog-add-account')).toBe(
        `This will: add OVH account staging at ${h.sim.apiUrl}: its credentials are proved with one OVH call first; nothing is stored if OVH refuses them.`,
      );
      const journalBefore = await journalLength();
      await confirm('dialog-add-account');
      const error = await dialog('dialog-add-account').locator('[data-testid=error]').innerText();
      expect(error).toBe(
        await refusal(
          admin().addOvhAccount({ name: 'staging', endpoint: h.sim.apiUrl, zones: [STAGING], credentials: credentialsText('WrongConsumerKey0000') }),
        ),
      );
      expect(error).toMatch(/^[a-z_]+: credentials: .*OVH/);
      expect(await accounts()).toEqual([]);
      expect(await journalLength()).toBe(journalBefore);
      await dialog('dialog-add-account').locator('[data-testid=back]').click();
      await fill(creds.consumerKey);
      await confirm('dialog-add-account');
      await closeDialog('dialog-add-account');
      await page.waitForSelector('[data-testid=accounts] tbody tr[data-account="staging"]');
      const [listed] = await accounts();
      expect([listed!.name, listed!.zones, listed!.enabled, listed!.status]).toEqual(['staging', [STAGING], true, 'ok']);
      const row = () => rowsOf(page, 'accounts').then((rows) => rows.find((r) => r[0] === 'staging')!);
      expect((await row()).slice(0, 6)).toEqual(['staging', h.sim.apiUrl, creds.applicationKey, 'default', STAGING, 'ok']);
      await shot(page, 'accounts');
      // Disabled: its state says so at once; enabled again.
      await rowOf('accounts', 'data-account', 'staging').locator('[data-testid=disable-account]').click();
      expect(await willText('dialog-enable-account')).toBe('This will: disable OVH account staging: its calls stop at once and its zones are unavailable.');
      await confirm('dialog-enable-account');
      await closeDialog('dialog-enable-account');
      await expect.poll(async () => (await row())[5]).toMatch(/^disabled/);
      expect((await accounts())[0]!.enabled).toBe(false);
      await rowOf('accounts', 'data-account', 'staging').locator('[data-testid=enable-account]').click();
      await confirm('dialog-enable-account');
      await closeDialog('dialog-enable-account');
      await expect.poll(async () => (await accounts())[0]!.enabled).toBe(true);
      // The secret pasted is not on the page once the dialog is gone, nor in a URL or a log (afterAll).
      expect(await page.locator('body').innerText()).not.toContain(creds.applicationSecret);
      shown.push(creds.applicationSecret, creds.consumerKey);
    });

    it('protected names: protected on the Zones page through the confirm step (a plan touching one then needs approval), listed, lifted', async () => {
      await open(page, 'zones', '[data-testid=protected-names]');
      await page.click('[data-testid=protect-names]');
      await page.selectOption('[data-testid=pn-zone]', ZONE);
      await page.fill('[data-testid=pn-names]', `api.${ZONE}, prod.${ZONE}`);
      await page.check('[data-testid=pn-suffix]');
      await page.click('[data-testid=dialog-protect-names] [data-testid=review]');
      expect(await willText('dialog-protect-names')).toBe(
        `This will: protect api.${ZONE}, prod.${ZONE} and every name below them in zone ${ZONE}: a plan changing a record set there needs a second admin's approval, whatever its size, with force too.`,
      );
      await confirm('dialog-protect-names');
      expect((await admin().listProtectedNames({ zone: ZONE })).names.map((p) => [p.name, p.suffix, p.createdBy])).toEqual([
        [`api.${ZONE}`, true, 'admin'],
        [`prod.${ZONE}`, true, 'admin'],
      ]);
      await closeDialog('dialog-protect-names');
      await rowOf('protected-names', 'data-name', `prod.${ZONE}`).waitFor();
      expect((await rowsOf(page, 'protected-names')).map((r) => [r[0], r[1], r[2], r[4]])).toEqual([
        [ZONE, `api.${ZONE}`, 'yes', 'admin'],
        [ZONE, `prod.${ZONE}`, 'yes', 'admin'],
      ]);
      const planned = (await h.zoneClient(tokens['bob']!).plan(upsert([ep(`x.api.${ZONE}`, 'A', ['192.0.2.77'])]).source.value)).plan!;
      expect(planned.zones[0]!.threshold).toMatchObject({ wouldRefuse: true, protectedNames: [`x.api.${ZONE}`] });
      await page.evaluate('window.scrollTo(0, document.body.scrollHeight)');
      await shot(page, 'zones-protected-names', false);

      for (const name of [`api.${ZONE}`, `prod.${ZONE}`]) {
        await rowOf('protected-names', 'data-name', name).locator('[data-testid=unprotect]').click();
        expect(await willText('dialog-unprotect-names')).toBe(
          `This will: lift the protection of ${name} in zone ${ZONE}: its changes apply again like any other (the change threshold still holds).`,
        );
        await confirm('dialog-unprotect-names');
        await closeDialog('dialog-unprotect-names');
      }
      expect((await admin().listProtectedNames({ zone: ZONE })).names).toEqual([]);
      await page.locator('[data-testid=protected-names]', { hasText: 'No protected name.' }).waitFor();
    });

    it('CSRF: a cross-site form posting to a write RPC, in the browser where an admin is signed in, is refused and writes nothing', async () => {
      // Another site's page, in the same browser context as the signed-in admin: its form can send
      // neither the Authorization header nor a JSON content type, and dnsplane reads no cookie.
      const evil = await page.context().newPage();
      const target = `${h.server.url}/dnsplane.v1.AdminService/CreateTenant`;
      await evil.route('http://evil.test/**', (route) =>
        route.fulfill({
          contentType: 'text/html',
          body: `<form id=f method=post enctype=text/plain action="${target}"><input name='{"name":"csrf-victim","scopes":["admin"],"x":"' value='"}'></form><script>document.getElementById('f').submit()</script>`,
        }),
      );
      const [response] = await Promise.all([evil.waitForResponse(target), evil.goto('http://evil.test/')]);
      expect([401, 415]).toContain(response.status());
      expect(await tenantOf('csrf-victim')).toBeUndefined();
      await evil.close();
      // Nor a request without the header, from another origin or with the token as a cookie.
      for (const headers of [
        { 'content-type': 'application/json', origin: 'http://evil.test' },
        { 'content-type': 'application/json', cookie: `token=${tokens['admin']}` },
      ] as Array<Record<string, string>>) {
        const res = await fetch(target, { method: 'POST', headers, body: JSON.stringify({ name: 'csrf-victim' }) });
        expect(res.status).toBe(401);
      }
      expect(await tenantOf('csrf-victim')).toBeUndefined();
    });

    it('reverts an apply from its journal entry: a plan for its tenant that puts back what it changed (a cancel stores none), which the tenant applies', async () => {
      const dave = (await h.adminClient(tokens['admin']).createTenant({ name: 'dave', zones: [ZONE] })).token;
      const applied = await h.zoneClient(dave).apply(upsert([ep(`undo.${ZONE}`, 'A', ['192.0.2.90'])]));
      const journalId = applied.zones[0]!.journalId;
      const plansOf = async () => (await admin().listPlans({ tenant: 'dave', limit: 1000 })).plans.length;
      await open(page, 'journal', '[data-testid=journal] table');
      await rowOf('journal', 'data-id', journalId).click();
      await page.locator('[data-testid=entry-detail] [data-testid=revert]').click();
      expect(await willText('dialog-revert')).toMatch(
        new RegExp(
          `^This will: store a plan for tenant "dave" that puts back what apply ${journalId} changed in ${ZONE.replace('.', '\\.')}, owned as before\\. `,
        ),
      );
      await dialog('dialog-revert').locator('[data-testid=cancel]').click();
      expect(await plansOf()).toBe(0);
      await page.locator('[data-testid=entry-detail] [data-testid=revert]').click();
      await confirm('dialog-revert');
      const planId = await dialog('dialog-revert').locator('[data-testid=revert-plan]').innerText();
      expect(await dialog('dialog-revert').locator('[data-testid=revert-result]').innerText()).toContain('No record set was touched since');
      await shot(page, 'write-revert', false);
      await closeDialog('dialog-revert');
      const stored = await admin().getPlan({ id: planId });
      expect(stored.summary!.tenant).toBe('dave');
      h.sim.clearCalls();
      expect((await h.zoneClient(dave).apply({ source: { case: 'planId', value: planId } })).zones[0]!.error).toBe('');
      expect(callLines(h.sim).filter((c) => !c.startsWith('GET '))).toEqual([
        expect.stringMatching(new RegExp(`^DELETE /domain/zone/${ZONE.replace('.', '\\.')}/record/\\d+$`)),
        `POST /domain/zone/${ZONE}/refresh`,
      ]);
    });

    it('approves a plan over the change threshold (an admin other than who asked), which its tenant then applies; a plan not over it is refused with the rule', async () => {
      const erin = (await h.adminClient(tokens['admin']).createTenant({ name: 'erin', zones: [OTHER] })).token;
      const sets = Array.from({ length: 10 }, (_, i) => ep(`e${i}.${OTHER}`, 'A', [`192.0.2.${100 + i}`]));
      await h.zoneClient(erin).apply(upsert(sets));
      await admin().setTenantMaxChangePercent({ name: 'erin', maxChangePercent: 10 });
      const desired = (endpoints: typeof sets) => ({ policy: Policy.SYNC, input: { case: 'desired' as const, value: { zones: [OTHER], endpoints } } });
      const over = (await h.zoneClient(erin).plan(desired(sets.slice(0, 7)))).plan!;
      await open(page, `plans/${over.id}`, '[data-testid=approved]');
      expect(await page.locator('[data-testid=approved]').innerText()).toBe('—');
      await page.locator('[data-testid=approve]').click();
      expect(await willText('dialog-approve')).toMatch(
        new RegExp(`^This will: approve plan ${over.id} of tenant "erin" \\(asked by erin, digest [0-9a-f]{12}…\\): its tenant may then apply it`),
      );
      expect(await dialog('dialog-approve').locator('[data-testid=confirm]').getAttribute('class')).toBe('danger');
      await confirm('dialog-approve');
      expect(await dialog('dialog-approve').locator('[data-testid=approve-result]').innerText()).toMatch(/^Approved by admin at \d{4}-/);
      await shot(page, 'write-approve', false);
      await closeDialog('dialog-approve');
      expect(await page.locator('[data-testid=approved]').innerText()).toMatch(/^by admin at /);
      expect(await page.locator('[data-testid=approve]').count()).toBe(0);
      expect((await h.zoneClient(erin).apply({ source: { case: 'planId', value: over.id } })).zones[0]!.error).toBe('');

      const small = (await h.zoneClient(erin).plan(desired(sets.slice(0, 7)))).plan!; // nothing left to delete
      await open(page, `plans/${small.id}`, '[data-testid=approved]');
      await page.locator('[data-testid=approve]').click();
      await confirm('dialog-approve');
      expect(await dialog('dialog-approve').locator('[data-testid=error]').innerText()).toBe(await refusal(admin().approvePlan({ id: small.id })));
      await dialog('dialog-approve').locator('[data-testid=cancel], [data-testid=close]').first().click();
    });

    describe('drain and retire (issue 46)', () => {
      const sharedEp = (name: string, target: string) =>
        create(EndpointSchema, { dnsName: `${name}.${ZONE}`, recordType: 'A', targets: [target], ttl: 300, labels: { 'dnsplane/shared': 'true' } });
      const nonGet = () => callLines(h.sim).filter((l) => !l.startsWith('GET '));
      const REC = `/domain/zone/${ZONE}/record`;
      async function openDialog(tenant: string, button: string, testid: string): Promise<void> {
        await open(page, 'zones', '[data-testid=zones] table'); // away and back: the page reads the tenants made just now
        await open(page, 'tenants', `[data-testid=tenants] tr[data-tenant="${tenant}"]`);
        await rowOf('tenants', 'data-tenant', tenant).locator(`[data-testid=${button}]`).click();
        await dialog(testid).waitFor();
      }
      /** drpool's rows on the Records page (one per owner), read afresh: "owner: health". */
      async function drpoolStates(): Promise<string[]> {
        await open(page, 'zones', '[data-testid=zones] table');
        await open(page, `zones/${ZONE}`, '[data-testid=records] table');
        await page.fill('[data-testid=filter-name]', 'drpool');
        const api = (await h.zoneClient(tokens['admin']).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints.filter(
          (e) => e.dnsName === `drpool.${ZONE}`,
        );
        await expect.poll(() => rowsOf(page, 'records')).toEqual(api.map(recordRow));
        return (await rowsOf(page, 'records')).map((r) => `${r[4]}: ${r[5]}`).sort();
      }

      it('drains a tenant (its targets of shared sets withdrawn: one DELETE, one refresh, the last target kept), then undrains it (one POST, one refresh)', async () => {
        const c1 = await h.tenant('dr-c1', [ZONE]);
        const c2 = await h.tenant('dr-c2', [ZONE]);
        await h.zoneClient(c1).apply(upsert([sharedEp('drpool', '192.0.2.81')]));
        await h.zoneClient(c2).apply(upsert([sharedEp('drpool', '192.0.2.82'), sharedEp('dralone', '192.0.2.83')]));
        expect(await drpoolStates()).toEqual(['dr-c1 shared: ', 'dr-c2 shared: ']);

        await openDialog('dr-c2', 'drain-tenant', 'dialog-drain');
        await expect
          .poll(() => dialog('dialog-drain').locator('[data-testid=drain-state]').innerText())
          .toBe(`Tenant "dr-c2" owns 2 targets of shared sets (${ZONE}: 2): 0 drained now, 2 not.`);
        expect(await page.locator('[data-testid=dr-action]').inputValue()).toBe('drain');
        h.sim.clearCalls();
        await page.click('[data-testid=dialog-drain] [data-testid=review]');
        expect(await willText('dialog-drain')).toBe(
          `This will: withdraw from OVH now the 2 targets of shared sets tenant "dr-c2" owns (${ZONE}: 2), listed below, until Undrain. OVH calls expected: at most 2 DELETE /domain/zone/…/record/ID (one per target; a set's last published target is kept, never withdrawn) and 1 POST …/refresh (one per zone). Its exclusive sets stay. Journalled per zone.`,
        );
        expect(await text(page, '[data-testid=dialog-drain] [data-testid=drain-targets] li')).toEqual([
          `dralone.${ZONE} A 192.0.2.83 (${ZONE})`,
          `drpool.${ZONE} A 192.0.2.82 (${ZONE})`,
        ]);
        expect(await dialog('dialog-drain').locator('[data-testid=confirm]').innerText()).toBe('Drain');
        expect(JSON.parse((await dialog('dialog-drain').locator('[data-testid=request]').textContent()) ?? '')).toEqual({
          name: 'dr-c2',
          zone: '',
          undrain: false,
        });
        expect(nonGet()).toEqual([]); // the confirm step sent nothing
        await shot(page, 'write-drain-confirm', false);
        await confirm('dialog-drain');
        expect(await dialog('dialog-drain').locator('[data-testid=drain-summary]').innerText()).toMatch(
          /^Tenant "dr-c2" drained: 1 target\(s\) withdrawn, 1 kept; 2 OVH calls; journal entry \d+\.$/,
        );
        expect(await text(page, '[data-testid=dialog-drain] [data-testid=drain-outcome] li')).toEqual([
          `dralone.${ZONE} A 192.0.2.83 (${ZONE}): kept (last-target)`,
          `drpool.${ZONE} A 192.0.2.82 (${ZONE}): withdrawn`,
        ]);
        expect(nonGet()).toEqual([expect.stringMatching(new RegExp(`^DELETE ${REC.replace('.', '\\.')}/\\d+$`)), `POST /domain/zone/${ZONE}/refresh`]);
        expect((await dialog('dialog-drain').locator('[data-testid=drain-calls]').innerText()).split('\n')).toEqual(nonGet());
        await shot(page, 'write-drain-result', false);
        await closeDialog('dialog-drain');
        // The Records page shows the drained target withdrawn, and why.
        expect(await drpoolStates()).toEqual(['dr-c1 shared: ', 'dr-c2 shared: 192.0.2.82 withdrawn']);
        expect(await page.locator('[data-testid=target-state]').first().getAttribute('title')).toMatch(/^drained · since /);

        // Undrain: the dialog now says what is drained, and offers to put it back.
        await openDialog('dr-c2', 'drain-tenant', 'dialog-drain');
        await expect
          .poll(() => dialog('dialog-drain').locator('[data-testid=drain-state]').innerText())
          .toBe(`Tenant "dr-c2" owns 2 targets of shared sets (${ZONE}: 2): 1 drained now, 1 not.`);
        await page.selectOption('[data-testid=dr-action]', 'undrain');
        h.sim.clearCalls();
        await page.click('[data-testid=dialog-drain] [data-testid=review]');
        expect(await willText('dialog-drain')).toBe(
          `This will: put back on OVH the 1 target of shared sets a drain withdrew from tenant "dr-c2" (${ZONE}: 1), listed below. OVH calls expected: at most 1 POST /domain/zone/…/record (one per target) and 1 POST …/refresh (one per zone). Journalled per zone.`,
        );
        expect(await dialog('dialog-drain').locator('[data-testid=confirm]').innerText()).toBe('Undrain');
        await shot(page, 'write-undrain-confirm', false);
        await confirm('dialog-drain');
        expect(await dialog('dialog-drain').locator('[data-testid=drain-summary]').innerText()).toMatch(
          /^Tenant "dr-c2" undrained: 1 target\(s\) restored, 0 kept; 2 OVH calls; journal entry \d+\.$/,
        );
        expect(nonGet()).toEqual([`POST ${REC}`, `POST /domain/zone/${ZONE}/refresh`]);
        expect(h.sim.writes()[0]!.body).toEqual({ fieldType: 'A', subDomain: 'drpool', target: '192.0.2.82', ttl: 300 });
        await closeDialog('dialog-drain');
        expect(await drpoolStates()).toEqual(['dr-c1 shared: ', 'dr-c2 shared: ']);
      });

      it('retires a tenant by handing what it owns to another: no OVH call, the tenant disabled (its token refused)', async () => {
        const blue = await h.tenant('rt-blue', [ZONE]);
        await h.tenant('rt-green', [ZONE]);
        await h.zoneClient(blue).apply(upsert([ep(`rt.${ZONE}`, 'A', ['192.0.2.88'])]));
        await openDialog('rt-blue', 'retire-tenant', 'dialog-retire');
        await expect
          .poll(() => dialog('dialog-retire').locator('[data-testid=retire-state]').innerText())
          .toBe(`Tenant "rt-blue" owns 1 record set and 0 targets of shared sets (${ZONE}: 1).`);
        expect(await page.locator('[data-testid=rt-plan]').isVisible()).toBe(false);
        expect(await rowOf('tenants', 'data-tenant', 'admin').locator('[data-testid=retire-tenant]').count()).toBe(0); // not oneself
        await page.click('[data-testid=dialog-retire] [data-testid=review]');
        expect(await dialog('dialog-retire').locator('[data-testid=error]').innerText()).toBe('New owner: name the tenant that takes over what it owns');
        // An heir whose grants do not cover what it owns: refused with the API's words (a PermissionDenied that is
        // the write's rule, not the page's admin scope), nothing moves, not retired.
        await page.fill('[data-testid=rt-to]', 'erin');
        await page.click('[data-testid=dialog-retire] [data-testid=review]');
        await confirm('dialog-retire');
        expect(await dialog('dialog-retire').locator('[data-testid=error]').innerText()).toBe(
          await refusal(admin().retireTenant({ name: 'rt-blue', handoverTo: 'erin' })),
        );
        expect((await tenantOf('rt-blue'))!.disabled).toBe(false);
        await dialog('dialog-retire').locator('[data-testid=back]').click();
        await page.fill('[data-testid=rt-to]', 'rt-green');
        h.sim.clearCalls();
        await page.click('[data-testid=dialog-retire] [data-testid=review]');
        expect(await willText('dialog-retire')).toBe(
          `This will: hand everything tenant "rt-blue" owns — 1 ownership row (${ZONE}: 1) — over to tenant "rt-green", in one transaction with no OVH call; then disable tenant "rt-blue" (its token stops working at once) and mark it retired, in one journal entry.`,
        );
        expect(JSON.parse((await dialog('dialog-retire').locator('[data-testid=request]').textContent()) ?? '')).toEqual({
          name: 'rt-blue',
          handoverTo: 'rt-green',
          deleteRecords: false,
          planId: '',
        });
        await confirm('dialog-retire');
        expect(await dialog('dialog-retire').locator('[data-testid=retire-how]').innerText()).toMatch(
          /^Handed over 1 ownership row\(s\) to "rt-green" \(no OVH call\); journal entry \d+\.$/,
        );
        const summary = await dialog('dialog-retire').locator('[data-testid=retire-summary]').innerText();
        expect(summary).toMatch(/^Tenant "rt-blue" retired and disabled; journal entry \d+\.$/);
        await shot(page, 'write-retire-handover', false);
        await closeDialog('dialog-retire');
        expect(nonGet()).toEqual([]);
        expect((await admin().listOwnership({ zone: ZONE })).entries.find((e) => e.dnsName === `rt.${ZONE}`)?.tenant).toBe('rt-green');
        expect((await tenantOf('rt-blue'))!.disabled).toBe(true);
        expect(await whoIs(blue)).toBe('Unauthenticated');
        expect((await rowsOf(page, 'tenants')).find((r) => r[0] === 'rt-blue')![4]).toBe('disabled');
      });

      it("retires a tenant by deleting its records: the plan shown first with its id and calls; over the threshold refused with the API's words, nothing sent; approved by a second admin, the same plan deletes", async () => {
        const del = await h.tenant('rt-del', [OTHER]);
        const sets = Array.from({ length: 10 }, (_, i) => ep(`rd${i}.${OTHER}`, 'A', [`192.0.2.${160 + i}`]));
        await h.zoneClient(del).apply(upsert(sets));
        await admin().setTenantMaxChangePercent({ name: 'rt-del', maxChangePercent: 10 });
        const plansOfDel = async () => (await admin().listPlans({ tenant: 'rt-del', limit: 1000 })).plans;
        const plansBefore = (await plansOfDel()).length;
        await openDialog('rt-del', 'retire-tenant', 'dialog-retire');
        await expect
          .poll(() => dialog('dialog-retire').locator('[data-testid=retire-state]').innerText())
          .toBe(`Tenant "rt-del" owns 10 record sets and 0 targets of shared sets (${OTHER}: 10).`);
        await page.selectOption('[data-testid=rt-how]', 'delete');
        expect(await page.locator('[data-testid=rt-to]').isVisible()).toBe(false);
        await shot(page, 'write-retire-form', false);
        h.sim.clearCalls();
        await page.click('[data-testid=dialog-retire] [data-testid=review]');
        const will = await willText('dialog-retire');
        const planId = await dialog('dialog-retire').locator('[data-testid=retire-plan]').innerText();
        // The plan shown is the one stored for the tenant, asked by the admin, drawn as the CLI draws it.
        const stored = await admin().getPlan({ id: planId });
        expect([stored.summary!.tenant, stored.summary!.requestedBy, (await plansOfDel()).length]).toEqual(['rt-del', 'admin', plansBefore + 1]);
        // (less its last line: the plan is applied by the retire, not by dnsplane apply)
        expect(await diffLines(page)).toEqual(renderPlan(stored.plan!, { color: false }).slice(0, -1));
        expect(will).toBe(
          `This will: apply plan ${planId} as tenant "rt-del": 10 to delete, 0 to update (a shared set loses only its targets) in ${OTHER}, with the 11 OVH calls listed in the plan below; then disable tenant "rt-del" (its token stops working at once) and mark it retired, in one journal entry. Over the change threshold in ${OTHER} (10 of 10 sets, max 10%): without a second admin's approval of this plan nothing is sent and the tenant is not retired (the refusal says so); approve it on the Plans page, then Retire again with its id.`,
        );
        expect(JSON.parse((await dialog('dialog-retire').locator('[data-testid=request]').textContent()) ?? '')).toEqual({
          name: 'rt-del',
          handoverTo: '',
          deleteRecords: true,
          planId,
        });
        await shot(page, 'write-retire-plan', false);
        await confirm('dialog-retire');
        const refused = await dialog('dialog-retire').locator('[data-testid=error]').innerText();
        expect(refused).toMatch(
          new RegExp(
            `^failed_precondition: .*; tenant "rt-del" is not retired: plan ${planId} stays pending — a second admin approves it \\(dnsplane plan approve ${planId}\\), then run the retire again with it \\(--plan ${planId}\\)$`,
          ),
        );
        expect(refused).toBe(await refusal(admin().retireTenant({ name: 'rt-del', deleteRecords: true, planId })));
        await expect.poll(() => dialog('dialog-retire').locator('[data-testid=error]').isVisible()).toBe(true); // under the words, above the plan
        await shot(page, 'write-retire-refused', false);
        expect(nonGet()).toEqual([]);
        expect((await tenantOf('rt-del'))!.disabled).toBe(false);
        await page.keyboard.press('Escape');
        await expect.poll(() => page.locator('[data-testid=overlay]').count()).toBe(0);

        // A second admin approves the plan; the retire, given its id, applies it: ten DELETEs and one refresh.
        const second = await h.tenant('admin-two', [], { admin: true });
        await h.adminClient(second).approvePlan({ id: planId });
        await openDialog('rt-del', 'retire-tenant', 'dialog-retire');
        await page.selectOption('[data-testid=rt-how]', 'delete');
        // A plan id of another tenant's plan is refused in the form, naming the field.
        const erins = (await admin().listPlans({ tenant: 'erin', limit: 1 })).plans[0]!.id;
        await page.fill('[data-testid=rt-plan]', erins);
        await page.click('[data-testid=dialog-retire] [data-testid=review]');
        await expect
          .poll(() => dialog('dialog-retire').locator('[data-testid=error]').innerText())
          .toBe(`Plan id: plan ${erins} is tenant "erin"'s, not "rt-del"'s`);
        await page.fill('[data-testid=rt-plan]', planId);
        await page.click('[data-testid=dialog-retire] [data-testid=review]');
        expect(await dialog('dialog-retire').locator('[data-testid=retire-over]').innerText()).toBe(
          `Over the change threshold in ${OTHER} (10 of 10 sets, max 10%): approved by admin-two.`,
        );
        expect(await dialog('dialog-retire').locator('[data-testid=retire-plan]').innerText()).toBe(planId);
        expect((await plansOfDel()).length).toBe(plansBefore + 1); // a plan given by id: none stored
        h.sim.clearCalls();
        await confirm('dialog-retire');
        expect(await dialog('dialog-retire').locator('[data-testid=retire-how]').innerText()).toBe(`Its records deleted by plan ${planId}: 11 OVH calls.`);
        expect(await dialog('dialog-retire').locator('[data-testid=retire-summary]').innerText()).toMatch(
          /^Tenant "rt-del" retired and disabled; journal entry \d+\.$/,
        );
        const deletes = Array.from({ length: 10 }, () => expect.stringMatching(new RegExp(`^DELETE /domain/zone/${OTHER.replace('.', '\\.')}/record/\\d+$`)));
        expect(nonGet()).toEqual([...deletes, `POST /domain/zone/${OTHER}/refresh`]);
        expect((await dialog('dialog-retire').locator('[data-testid=retire-calls]').innerText()).split('\n')).toEqual(nonGet());
        await shot(page, 'write-retire-deleted', false);
        await closeDialog('dialog-retire');
        expect((await tenantOf('rt-del'))!.disabled).toBe(true);
        expect((await admin().listOwnership({ tenant: 'rt-del' })).entries).toEqual([]);
        expect(h.sim.publishedRecords(OTHER).filter((r) => r.subDomain.startsWith('rd'))).toEqual([]);
      });
    });
  });

  it('a tenant token sees its own zones, and every admin page refuses it', async () => {
    const page = await newPage();
    await signIn(page, tokens['bob']!);
    expect(await page.locator('[data-testid=who]').innerText()).toBe('bob');
    expect(await text(page, '#nav a')).toEqual(['Zones']);
    await open(page, 'zones', '[data-testid=zones] table');
    expect((await rowsOf(page, 'zones')).map((r) => r[0])).toEqual([ZONE]);
    await open(page, `zones/${ZONE}`, '[data-testid=records] table');
    const api = (await h.zoneClient(tokens['bob']).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints;
    expect(await rowsOf(page, 'records')).toEqual(api.map(recordRow));
    expect(await page.locator('[data-testid=export-zone]').count()).toBe(0); // export is an admin's
    expect(await page.locator('[data-write]').count()).toBe(0); // so are the writes
    // Another tenant's zone: the API refuses, the page says so.
    await page.evaluate(`location.hash = '#/zones/big.test'`);
    await expect.poll(() => page.locator('section.page [data-testid=refused]').count()).toBe(1);

    const planId = (await h.adminClient(tokens['admin']).listPlans({ limit: 1 })).plans[0]!.id;
    for (const route of ['journal', 'plans', 'tenants', 'plan-as', 'accounts', `plans/${planId}`, 'orphans']) {
      await page.evaluate(`location.hash = ${JSON.stringify(`#/${route}`)}`);
      const refused = page.locator(`section.page[data-page="${route.replace(/\/.*$/, '/').replace(/\/$/, '')}"] [data-testid=refused]`);
      await refused.waitFor();
      expect(await refused.innerText()).toBe(
        'Not allowed. This page needs a token with the admin scope. The server answered: this call needs the admin scope; tenant "bob" does not have it',
      );
      expect(await page.locator('section.page table').count()).toBe(0);
      expect(await page.locator('section.page form').count()).toBe(0);
      expect(await page.locator('[data-write]').count()).toBe(0); // no write control
      expect(await page.locator('[data-testid=handover-tenant], [data-testid=drain-tenant], [data-testid=retire-tenant]').count()).toBe(0);
      if (route === 'journal') await shot(page, 'tenant-refused');
    }
    await page.context().close();
  });

  /** A Connect timestamp as the console prints it. */
  const time = (ts: { seconds: bigint; nanos: number } | undefined) =>
    ts
      ? new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6))
          .toISOString()
          .replace('T', ' ')
          .replace(/\.\d+Z$/, 'Z')
      : '—';
  const msOf = (ts: { seconds: bigint; nanos: number }) => Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6);
  /** A delay as the console prints it ("4.2 s"). */
  function delay(from: { seconds: bigint; nanos: number } | undefined, to: { seconds: bigint; nanos: number } | undefined): string {
    if (!from || !to) return '—';
    const ms = msOf(to) - msOf(from);
    if (ms < 60_000) return `${(Math.max(ms, 0) / 1000).toFixed(1)} s`;
    const s = Math.round(ms / 1000);
    return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  }
  const STATE_TEXT: Record<number, string> = {
    [VisibilityState.PUBLISHED]: 'published',
    [VisibilityState.VISIBLE]: 'visible',
    [VisibilityState.NOT_VISIBLE]: 'not visible',
    [VisibilityState.UNVERIFIED]: 'unverified',
    [VisibilityState.SUPERSEDED]: 'superseded',
  };
  /** The journal's Visible cell: the state, and the delay once visible. */
  const cell = (v: Visibility) => (v.state === VisibilityState.VISIBLE ? `${STATE_TEXT[v.state]} ${delay(v.publishedAt, v.visibleAt)}` : STATE_TEXT[v.state]!);
  /** A zone's chip for one publish. */
  const chip = (v: Visibility) => (v.state === VisibilityState.VISIBLE ? delay(v.publishedAt, v.visibleAt) : STATE_TEXT[v.state]!);

  /** The diff's lines as text (an empty line is drawn as a no-break space). */
  async function diffLines(page: Page): Promise<string[]> {
    return (await page.locator('[data-testid=diff] .line').allInnerTexts()).map((l) => (l === '\u00a0' ? '' : l));
  }
});
