/**
 * Rotating the key that seals secrets at rest (`dnsplane secrets reseal`; docs/operations.md): every
 * stored secret (a key's current one, an OVH account's credentials, and one a rotation with a grace replaced) not sealed with the box's sealing key (the first of DNSPLANE_SECRETS_KEYS) is opened
 * with the key it names and sealed again under the sealing key, row by row, online. A row is written
 * only if it still holds what was read (a rotation or delete in between wins, and its new secret is
 * already under the sealing key), so no secret is lost and none is written twice. The plaintext lives
 * only between open and seal; replicas' caches of opened secrets stay right (the secret is the same).
 * A replica may serve during a reseal with either list (new key first or old key first): both keys
 * open both forms.
 */
import * as store from '../../store/index.js';
import { accountSecretContext } from '../accounts/credentials.js';
import { ovhSecretContext } from '../keys/ovh.js';
import type { SecretBox } from '../keys/secrets.js';
import { secretContext } from '../keys/tsig.js';

export interface ResealResult {
  /** Secrets now sealed with the sealing key that were not. */
  resealed: number;
  /** Rows changed by someone else between read and write (their new secret needs no reseal). */
  changedMeanwhile: number;
  /** The sealing key's id (hex). */
  keyId: string;
  /** The key ids (hex) resealed from, with how many each. */
  from: Record<string, number>;
}

/** Rows read per round. */
const BATCH = 200;

export async function resealSecrets(pool: store.Queryable, box: SecretBox): Promise<ResealResult> {
  const result: ResealResult = { resealed: 0, changedMeanwhile: 0, keyId: box.keyIdHex, from: {} };
  const skipped = new Set<string>();
  for (;;) {
    const entries = (await store.listSealedNotUnder(pool, box.keyId, BATCH + skipped.size)).filter((e) => !skipped.has(`${e.table}:${e.slot}:${e.id}`));
    if (entries.length === 0) return result;
    for (const entry of entries) {
      const context =
        entry.table === 'tsig_keys'
          ? secretContext(entry.label)
          : entry.table === 'ovh_accounts'
            ? accountSecretContext(entry.label)
            : ovhSecretContext(entry.label);
      const from = entry.sealed.keyId.toString('hex');
      const secret = box.open(entry.sealed, context); // SecretsKeyError names the key it needs
      try {
        if (await store.replaceSealed(pool, entry, entry.sealed, box.seal(secret, context))) {
          result.resealed++;
          result.from[from] = (result.from[from] ?? 0) + 1;
        } else {
          result.changedMeanwhile++;
          skipped.add(`${entry.table}:${entry.slot}:${entry.id}`);
        }
      } finally {
        secret.fill(0);
      }
    }
  }
}
