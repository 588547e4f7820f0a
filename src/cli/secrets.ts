/**
 * `dnsplane secrets reseal`: every secret kept at rest (TSIG secrets, OVH application secrets, OVH accounts' credentials) sealed
 * again under the first key of DNSPLANE_SECRETS_KEYS, online (core/credentials/reseal.ts). Talks to the
 * database, as `tenant` does.
 */
import { parseArgs } from 'node:util';
import { resealSecrets } from '../core/credentials/reseal.js';
import { checkSealedSecrets } from '../core/keys/secrets.js';
import { secretBoxFor } from '../demo/demo.js';
import { InvalidInputError } from '../dns/errors.js';
import { configFrom, type Command } from './command.js';
import { withDatabase } from './migrate.js';

const HELP = `Usage: dnsplane secrets reseal [--json]

Seals every secret kept at rest (TSIG secrets, OVH application secrets, OVH accounts' credentials) again under the first key of
DNSPLANE_SECRETS_KEYS, opening each with the key it names. Online: replicas keep serving while it
runs, each opening both forms, as long as each lists both keys (new first or old first).

Rotating the key, with replicas running all along:
  1. every replica: DNSPLANE_SECRETS_KEYS=NEW,OLD  (a rolling restart; new secrets are sealed with NEW,
     and every secret opens with either key)
  2. DNSPLANE_SECRETS_KEYS=NEW,OLD dnsplane secrets reseal
  3. every replica: DNSPLANE_SECRETS_KEY=NEW  (OLD may go; a replica started without a key some
     secret needs refuses to start and names how many and whose)

A row rotated or deleted while the reseal runs is left as that change wrote it. Run it again to see
nothing left to do. Needs DATABASE_URL (or the demo's embedded database) and the keys.

  --json                the result as JSON: {resealed, changedMeanwhile, keyId, from}`;

export const secretsCommand: Command = {
  summary: 'secrets kept at rest: dnsplane secrets reseal (after adding a new DNSPLANE_SECRETS_KEYS key)',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({ args, options: { json: { type: 'boolean' } }, allowPositionals: true, strict: true });
    if (positionals[0] !== 'reseal')
      throw new InvalidInputError('subcommand', `must be "reseal", got ${positionals[0] === undefined ? 'none' : `"${positionals[0]}"`}`);
    if (positionals.length > 1) throw new InvalidInputError('arguments', `unexpected "${positionals[1]}"`);
    const config = configFrom(io);
    const box = await secretBoxFor(config);
    if (!box) throw new InvalidInputError('DNSPLANE_SECRETS_KEYS', 'is not set: the keys are needed to reseal (the new key first, the old after)');
    return withDatabase(io, async (db) => {
      await checkSealedSecrets(db.pool, box);
      const r = await resealSecrets(db.pool, box);
      if (values.json) io.out(JSON.stringify(r, null, 2));
      else {
        const from = Object.entries(r.from)
          .map(([k, n]) => `${n} from key ${k}`)
          .join(', ');
        io.out(
          r.resealed === 0
            ? `every secret is sealed with key ${r.keyId}: nothing to do`
            : `resealed ${r.resealed} secret${r.resealed === 1 ? '' : 's'} under key ${r.keyId} (${from})`,
        );
        if (r.changedMeanwhile > 0)
          io.out(`${r.changedMeanwhile} changed while the reseal ran (rotated or deleted) and were left as that change wrote them: run it again to check`);
      }
      return 0;
    });
  },
};
