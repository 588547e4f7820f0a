/**
 * Rotation without an outage (issue 31.6): a tenant's token rotated with a grace keeps the old token
 * working until the grace ends — from the token cache and from Postgres alike —, shows when in
 * ListTenants and `dnsplane tenant list`, and is refused after it. A later rotation ends a grace still
 * running. A grace over 7 days is refused naming the field.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantCommand } from '../../src/cli/tenant.js';
import { capturedIo } from '../helpers/cli-io.js';
import { expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const ZONE = 'grace.test';
let h: Harness;
let admin: string;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  admin = await h.tenant('root', [], { admin: true });
});

afterAll(async () => {
  await h?.close();
});

const works = async (token: string) =>
  h
    .zoneClient(token)
    .listZones({})
    .then(
      () => true,
      (e: { code?: Code }) => {
        if (e.code !== Code.Unauthenticated) throw e;
        return false;
      },
    );

describe('token rotation with a grace', () => {
  it('keeps the old token working for the grace, shown in the listing; both tokens work meanwhile', async () => {
    const old = await h.tenant('c1', [ZONE]);
    expect(await works(old)).toBe(true); // cached now
    const before = Date.now();
    const rotated = await h.adminClient(admin).rotateTenantToken({ name: 'c1', graceSeconds: 3600 });
    expect(await works(old)).toBe(true);
    expect(await works(rotated.token)).toBe(true);
    const until = Number(rotated.tenant!.previousTokenValidUntil!.seconds) * 1000;
    expect(until).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3600_000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);
    const listed = (await h.adminClient(admin).listTenants({})).tenants.find((t) => t.name === 'c1')!;
    expect(listed.previousTokenValidUntil?.seconds).toBe(rotated.tenant!.previousTokenValidUntil!.seconds);
    // The command line shows it too.
    const io = capturedIo({ DATABASE_URL: h.databaseUrl });
    expect(await tenantCommand.run(['list'], io)).toBe(0);
    expect(io.lines[0]).toMatch(/OLD TOKEN UNTIL\s+WITHDRAW AFTER\s+LAST SEEN\s+FROM$/);
    expect(io.lines.find((l) => l.startsWith('c1 '))).toMatch(new RegExp(`${new Date(until).toISOString().slice(0, 16)}`));
  });

  it('refuses the old token once its grace ends, whether the replica cached it or not', async () => {
    const old = await h.tenant('c2', [ZONE]);
    const rotated = await h.adminClient(admin).rotateTenantToken({ name: 'c2', graceSeconds: 1 });
    expect(await works(old)).toBe(true); // read from Postgres in its grace, then kept until its end
    await until('the old token refused after its one-second grace', async () => !(await works(old)));
    h.server.ctx.tokens?.clear();
    expect(await works(old)).toBe(false);
    expect(await works(rotated.token)).toBe(true);
    expect((await h.adminClient(admin).listTenants({})).tenants.find((t) => t.name === 'c2')!.previousTokenValidUntil).toBeUndefined();
  });

  it('a later rotation ends a grace still running; without --grace the old token stops at once', async () => {
    const first = await h.tenant('c3', [ZONE]);
    const second = (await h.adminClient(admin).rotateTenantToken({ name: 'c3', graceSeconds: 3600 })).token;
    expect(await works(first)).toBe(true);
    const third = (await h.adminClient(admin).rotateTenantToken({ name: 'c3', graceSeconds: 3600 })).token;
    expect([await works(first), await works(second), await works(third)]).toEqual([false, true, true]);
    const io = capturedIo({ DATABASE_URL: h.databaseUrl });
    expect(await tenantCommand.run(['rotate', 'c3'], io)).toBe(0);
    expect(io.lines[0]).toMatch(/^rotated the token of tenant "c3".*; the old token no longer works$/);
    // The command line rotates in the database: this replica drops its cached tokens on the NOTIFY.
    await until('the tokens of the rotation before to be refused', async () => !(await works(second)) && !(await works(third)));
    expect(await works(io.lines.at(-1)!)).toBe(true);
    const graced = capturedIo({ DATABASE_URL: h.databaseUrl });
    expect(await tenantCommand.run(['rotate', 'c3', '--grace', '10m'], graced)).toBe(0);
    expect(graced.lines[0]).toMatch(/^rotated the token of tenant "c3".*; the old token still works until \d{4}-\d\d-\d\dT/);
    expect(await works(io.lines.at(-1)!)).toBe(true);
  });

  it('refuses a grace over 7 days, naming the field, and changes nothing', async () => {
    const token = await h.tenant('c4', [ZONE]);
    await expectRejected(
      h.adminClient(admin).rotateTenantToken({ name: 'c4', graceSeconds: 8 * 24 * 3600 }),
      Code.InvalidArgument,
      /^graceSeconds: must be between 0 \(the old token stops at once\) and 7 days, got 691200 s$/,
    );
    expect(await works(token)).toBe(true);
    await expect(tenantCommand.run(['rotate', 'c4', '--grace', 'soon'], capturedIo({ DATABASE_URL: h.databaseUrl }))).rejects.toThrow(
      /--grace: must be a duration like/,
    );
  });
});
