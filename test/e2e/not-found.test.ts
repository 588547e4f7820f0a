/**
 * One not-found error: a row found missing by the store itself — not by core's own check — escapes
 * core as the store's NotFoundError, and the API must answer it NotFound like core's, never
 * "internal error". A trigger makes the tenant's row vanish for the UPDATE that rotates its token,
 * as if it were deleted between core's look-up and the store's write.
 */
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.com';
let h: Harness;
let admin: string;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_DRIFT_INTERVAL: 'off' } });
  admin = await h.tenant('admin', [], { admin: true });
  await h.tenant('ghost', [ZONE]);
  // A BEFORE trigger that answers NULL skips the row: the UPDATE finds nothing to change.
  await h.server.ctx.pool.query(`
    CREATE FUNCTION vanish() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
    CREATE TRIGGER vanish BEFORE UPDATE ON tenants FOR EACH ROW WHEN (OLD.name = 'ghost') EXECUTE FUNCTION vanish();`);
});
afterAll(async () => {
  await h?.close();
});

describe('a not-found that the store finds', () => {
  it("is answered NotFound with the store's message, as core's own not-found is", async () => {
    const client = h.adminClient(admin);
    await expectRejected(client.rotateTenantToken({ name: 'ghost' }), Code.NotFound, /^tenant "ghost" not found$/);
    await expectRejected(client.rotateTenantToken({ name: 'nobody' }), Code.NotFound, /^tenant "nobody" does not exist$/);
  });
});
