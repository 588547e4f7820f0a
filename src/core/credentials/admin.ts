/**
 * What managing a tenant's credentials with a sealed secret (TSIG keys: core/credentials/tsig-admin.ts; OVH
 * keys: core/credentials/ovh-admin.ts) has in common: the tenant named, the box that seals (refused, saying
 * how to set it, when the server has none), and who acted, in the journal's words.
 */
import type { Tenant } from '../../store/index.js';
import * as store from '../../store/index.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { SECRETS_KEY_RULE, SECRETS_KEY_SETTING, SecretsKeyError, type SecretBox } from './secrets.js';

/** The tenant of that name, or InvalidInput (none given) / NotFound naming the field. */
export async function tenantNamed(q: store.Queryable, name: string, field: string): Promise<Tenant> {
  if (name.trim() === '') throw new InvalidInputError(field, 'a tenant name is required');
  const t = await store.getTenantByName(q, name.trim());
  if (!t) throw new NotFoundError('tenant', name.trim(), `${field}: no tenant named "${name.trim()}" (dnsplane tenant list shows them)`);
  return t;
}

/** The box to seal with, or SecretsKeyError saying how to set one; `what`: "TSIG secrets". */
export function sealingBox(secrets: SecretBox | undefined, what: string): SecretBox {
  if (secrets) return secrets;
  throw new SecretsKeyError(`${SECRETS_KEY_SETTING} is not set: ${what} are kept sealed with it. It ${SECRETS_KEY_RULE}, the same value for every replica and for this command`);
}

/** "by <admin>", or "from the command line" (database access, no acting tenant). */
export function actedBy(actor: Tenant | null): string {
  return actor ? `by ${actor.name}` : 'from the command line';
}

/** What a rotation did to the old credential (`what`: "secret", ...), `until`: the end of its grace (ISO), if any. */
export function oldStops(what: string, until: string | undefined): string {
  const verb = what.includes(' and ') ? 'work' : 'works';
  return until ? `the old ${what} still ${verb} until ${until}` : `the old ${what} no longer ${verb}`;
}
