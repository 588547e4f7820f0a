/**
 * bench/estate's OVH accounts (issue 44): ESTATE_ACCOUNTS=A spreads the estate's zones over A
 * simulators, each an OVH account of its own — the first the `default` one (the OVH_* variables), the
 * others rows of ovh_accounts written before the server starts (as `dnsplane account add` stores them:
 * credentials sealed under the server's DNSPLANE_SECRETS_KEY, zones bound), zone z in account z mod A.
 * ESTATE_ACCOUNT_RATE=R gives every account, `default` included, the rate R (shared budget per
 * account). report() says what each account's simulator saw: its calls and the most in any second.
 */
import { randomBytes } from 'node:crypto';
import { sealCredentials } from '../src/core/accounts/credentials.js';
import { SecretBox } from '../src/core/keys/secrets.js';
import { generateCertificate } from '../src/ovhsim/cert.js';
import { OvhSimulator, type SimRecordInit } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';

export interface EstateAccounts {
  /** The simulators, the `default` account's first. */
  sims: OvhSimulator[];
  /** What the server needs beside the default's OVH_* (the secrets key, the rate). */
  env: Record<string, string>;
  /** Writes the accounts beside `default` and binds their zones (before the server starts). */
  seed(pool: store.Queryable): Promise<void>;
  /** One line per account: calls its simulator saw, and the most in any one second. */
  report(): string[];
  stop(): Promise<void>;
}

export async function startEstateAccounts(count: number, zones: Record<string, SimRecordInit[]>, rate: number | undefined): Promise<EstateAccounts> {
  const names = Object.keys(zones);
  const tls = count > 1 ? await generateCertificate() : undefined;
  const sims: OvhSimulator[] = [];
  for (let a = 0; a < count; a++) {
    const mine = Object.fromEntries(names.filter((_, z) => z % count === a).map((n) => [n, zones[n]!]));
    const sim = await OvhSimulator.start({ zones: mine, ...(tls ? { tls } : {}) });
    sim.setBehavior({ expandedRecordLists: 'honoured' });
    sims.push(sim);
  }
  const key = randomBytes(32);
  const accountName = (a: number) => `account-${a}`;
  return {
    sims,
    env: { ...(count > 1 ? { DNSPLANE_SECRETS_KEY: key.toString('base64') } : {}), ...(rate ? { DNSPLANE_OVH_RATE: String(rate) } : {}) },
    async seed(pool) {
      const box = new SecretBox(key);
      for (let a = 1; a < count; a++) {
        const sim = sims[a]!;
        const name = accountName(a);
        await store.insertOvhAccount(
          pool,
          { name, endpoint: sim.apiUrl, applicationKey: sim.credentials.applicationKey, rate: rate ?? null, zones: null },
          sealCredentials(box, name, sim.credentials),
        );
        await store.bindZonesToAccount(pool, name, sim.zones());
      }
    },
    report() {
      return sims.map((sim, a) => {
        const calls = sim.calls().filter((c) => c.path !== '/auth/time');
        let most = 0;
        for (let i = 0, j = 0; j < calls.length; j++) {
          while (calls[j]!.at - calls[i]!.at >= 1000) i++;
          most = Math.max(most, j - i + 1);
        }
        return `${a === 0 ? 'default' : accountName(a)} (${sim.zones().length} zones): ${calls.length} calls, at most ${most} in one second`;
      });
    },
    async stop() {
      for (const sim of sims) await sim.stop();
    },
  };
}
