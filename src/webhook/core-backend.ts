/**
 * The central mode: the webhook listener of `dnsplane serve` calls core in-process. The caller is
 * authenticated with HTTP Basic `tenant:token` (external-dns can only carry credentials in its URL):
 * the token must be the tenant's, and the user name must be that tenant's name.
 */
import { apply } from '../core/apply/index.js';
import type { CoreContext } from '../core/context.js';
import {
  ApplyFailedError,
  InvalidInputError,
  isDatabaseUnavailable,
  isRetryable,
  NotFoundError,
  OvhError,
  PermissionDeniedError,
  ShuttingDownError,
  ThresholdError,
  UnauthenticatedError,
} from '../core/errors.js';
import type { RawChangeSet } from '../core/plan/input.js';
import { records, visibleZonesIn, type ZoneStates } from '../core/records/records.js';
import { readCacheOf } from '../core/reads/read-cache.js';
import { authenticate, type Tenant } from '../core/tenants/tenants.js';
import { tokenHashHex } from '../core/keys/tokens.js';
import { noteSeen } from '../core/withdrawals/liveness.js';
import { entryOf, WebhookError, type ApplyOutcome, type WebhookBackend, type WebhookSession } from './backend.js';
import { messageOf } from '../lib/error-message.js';

/** The user and password of an `Authorization: Basic …` header, or undefined. */
export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  if (!header) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

const BAD_CREDENTIALS = 'invalid credentials: use https://TENANT:TOKEN@host/ as --webhook-provider-url';

/** Core errors as the statuses external-dns acts on; see WebhookError. */
export function fromCoreError(e: unknown): unknown {
  if (e instanceof WebhookError) return e;
  if (e instanceof UnauthenticatedError) return new WebhookError(401, BAD_CREDENTIALS);
  if (e instanceof InvalidInputError || e instanceof PermissionDeniedError || e instanceof NotFoundError)
    return new WebhookError(500, e.message, entryOf(e.message));
  // store's LockTimeoutError: matched by name, as the webhook room does not reach into store/.
  if (e instanceof Error && e.name === 'LockTimeoutError') return new WebhookError(503, e.message);
  if (e instanceof OvhError) return new WebhookError(e.transient ? 503 : 500, e.message);
  if (e instanceof ApplyFailedError) return new WebhookError(e.transient ? 503 : 500, e.message);
  if (e instanceof ShuttingDownError) return new WebhookError(503, e.message);
  // An outage, not a bug: external-dns retries on its next loop.
  if (isDatabaseUnavailable(e)) return new WebhookError(503, `database unavailable, retried next loop: ${messageOf(e)}`);
  return e;
}

async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw fromCoreError(e);
  }
}

/**
 * A session is one request. Its scope and its records share one generation read, made for this
 * request (it starts after the request arrived), instead of reading the generations twice.
 */
function sessionOf(ctx: CoreContext, tenant: Tenant, client: string | undefined): WebhookSession {
  let read: Promise<ZoneStates> | undefined;
  const fresh = () => (read ??= readCacheOf(ctx).zoneStates.get());
  return {
    scope: () => guarded(async () => ({ tenant: tenant.name, zones: visibleZonesIn(await fresh(), tenant, []), suffixes: [...tenant.suffixes] })),
    records: () =>
      guarded(async () => {
        const zones = await records(ctx, tenant, { zones: [], knownGenerations: new Map(), includeForeign: false }, await fresh());
        // One zone (the usual case): the view's own array, so the handler's encoded answer is kept.
        return zones.length === 1 ? zones[0]!.endpoints : zones.flatMap((z) => z.endpoints);
      }),
    apply: (changes: RawChangeSet) =>
      guarded(async (): Promise<ApplyOutcome> => {
        const result = await apply(ctx, tenant, { input: { kind: 'changes', changes, policy: 'sync' }, ...(client !== undefined ? { from: client } : {}) });
        return {
          zones: result.zones.map((z) => ({
            zone: z.zone,
            status: z.status,
            calls: z.calls.length,
            conflicts: z.conflicts,
            ...(z.error ? { error: z.error.message, transient: isRetryable(z.error) } : {}),
            ...(z.error instanceof ThresholdError ? { overThreshold: true } : {}),
          })),
        };
      }),
  };
}

export function coreBackend(ctx: CoreContext): WebhookBackend {
  return {
    mode: 'central',
    credential(authorization) {
      const basic = parseBasic(authorization);
      if (!basic || basic.password === '') return { authorization };
      // The one sha-256 of the token this request makes (token cache, login limiter).
      return { authorization, basic, hashHex: tokenHashHex(basic.password) };
    },
    async session({ basic, hashHex }, client) {
      if (!basic || basic.user === '' || hashHex === undefined) {
        throw new WebhookError(401, 'missing credentials: HTTP Basic TENANT:TOKEN is required (https://TENANT:TOKEN@host/ as --webhook-provider-url)');
      }
      const tenant = await guarded(() => authenticate(ctx.pool, basic.password, ctx.tokens, hashHex));
      // The same answer for a wrong name as for a wrong token: say nothing about which part was wrong.
      if (tenant.name !== basic.user) throw new WebhookError(401, BAD_CREDENTIALS);
      noteSeen(ctx, tenant, client);
      return sessionOf(ctx, tenant, client);
    },
    knows({ basic, hashHex }) {
      return basic !== undefined && hashHex !== undefined && ctx.tokens?.get(hashHex)?.name === basic.user;
    },
  };
}
