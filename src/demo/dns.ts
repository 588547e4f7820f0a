/**
 * Demo mode's TSIG key, so that the banner can print a ready `nsupdate` line for the DNS door: an
 * ACME-only key of the demo tenant, named demo-acme.dnsplane, its secret kept in the data directory
 * (DEMO_TSIG_FILE, mode 0600; the database keeps it sealed, as every TSIG secret) and reused while it
 * still opens the key, like the demo's tokens; `serve --new-tokens` rotates it. Part of the composition
 * root, beside demo/demo.ts. Only the demo's own tenant gets one (a "demo" tenant the demo did not create is
 * left alone), and never a key of that name another tenant holds.
 */
import { timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { createTsigKey, rotateTsigKey } from '../core/credentials/tsig-admin.js';
import { tsigKeyring, type TsigAlgorithm } from '../core/keys/tsig.js';
import { readPrivateFile, writePrivateFile } from './demo.js';
import * as store from '../store/index.js';
import { messageOf } from '../lib/error-message.js';

/** In the data directory: the demo's TSIG key ({"name": …, "secret": base64}), mode 0600. */
export const DEMO_TSIG_FILE = 'demo-tsig.json';
export const DEMO_TSIG_NAME = 'demo-acme.dnsplane';
const ALGORITHM: TsigAlgorithm = 'hmac-sha256';

export interface DemoTsigKey {
  name: string;
  algorithm: TsigAlgorithm;
  /** base64, as nsupdate -y takes it. */
  secret: string;
}

/**
 * The demo tenant's ACME-only key, kept or made; undefined when the demo may not make one, or could
 * not (logged: the demo goes on without its nsupdate line).
 */
export async function demoTsigKey(ctx: CoreContext, dataDir: string, opts: { newKey: boolean; log: Logger }): Promise<DemoTsigKey | undefined> {
  try {
    return await keptOrMade(ctx, dataDir, opts);
  } catch (e) {
    opts.log.warn({ key: DEMO_TSIG_NAME, err: messageOf(e) }, 'demo: no TSIG key for the nsupdate line');
    return undefined;
  }
}

async function keptOrMade(ctx: CoreContext, dataDir: string, opts: { newKey: boolean; log: Logger }): Promise<DemoTsigKey | undefined> {
  if (!ctx.secrets || (await store.demoMarkOf(ctx.pool, 'demo')) !== 'demo') return undefined;
  const file = path.join(dataDir, DEMO_TSIG_FILE);
  const kept = await readPrivateFile(file, opts.log, 'TSIG key file');
  const existing = await tsigKeyring(ctx).find(DEMO_TSIG_NAME);
  if (existing && existing.tenant.name !== 'demo') {
    opts.log.warn(
      { key: DEMO_TSIG_NAME, tenant: existing.tenant.name },
      "demo: a TSIG key of the demo's name belongs to another tenant: left alone, no nsupdate line",
    );
    return undefined;
  }
  const keptSecret = kept['name'] === DEMO_TSIG_NAME && kept['secret'] ? Buffer.from(kept['secret'], 'base64') : undefined;
  if (!opts.newKey && existing && keptSecret && keptSecret.length === existing.secret.length && timingSafeEqual(keptSecret, existing.secret)) {
    return { name: DEMO_TSIG_NAME, algorithm: existing.algorithm, secret: kept['secret']! };
  }
  const admin = { pool: ctx.pool, secrets: ctx.secrets, actor: null };
  const issued = existing
    ? await rotateTsigKey(admin, DEMO_TSIG_NAME)
    : await createTsigKey(admin, { tenant: 'demo', name: DEMO_TSIG_NAME, algorithm: ALGORITHM, acmeOnly: true });
  ctx.tsigKeys?.forget('demo'); // this replica at once (its nsupdate line may be run next); the others on NOTIFY
  const secret = issued.secret.toString('base64');
  await writePrivateFile(file, { name: DEMO_TSIG_NAME, secret });
  return { name: DEMO_TSIG_NAME, algorithm: issued.key.algorithm, secret };
}
