/**
 * The sidecar mode: `dnsplane webhook` runs beside external-dns in its pod, listens on localhost, and
 * calls the central service's ZoneService over Connect with the token it was given (a mounted secret
 * instead of a password in a URL; mutual TLS to the centre when the transport has it). The caller on
 * localhost is not authenticated: the pod's network namespace is the boundary.
 *
 * What the centre answers is reused: the zone list for `scopeTtlMs`, and each zone's records until its
 * generation moves (Records with known generations answers not_modified for unchanged zones).
 */
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import type { RawChangeSet, RawEndpoint } from '../core/plan/input.js';
import { REFUSAL_CHANGE_THRESHOLD, REFUSAL_HEADER, REFUSAL_ZONE_HEADER } from '../core/plan/guard.js';
import { isRecordType, type ChangeAction, type Conflict, type Endpoint } from '../dns/types.js';
import { ApplyStatus, ChangeAction as PbChangeAction, Policy, type Endpoint as PbEndpoint, type ZoneService } from '../gen/dnsplane/v1/zone_pb.js';
import { entryOf, WebhookError, type ApplyOutcome, type WebhookBackend, type WebhookSession, type ZoneStatus } from './backend.js';
import type { TenantScope } from './normalize.js';

export interface ConnectBackendOptions {
  client: Client<typeof ZoneService>;
  /** How long the zone list is reused. Default 60 s. */
  scopeTtlMs?: number;
  /** Deadline of each call to the centre. Default 30 s. */
  timeoutMs?: number;
}

/**
 * The Node error (with a `code` such as ECONNRESET, EPROTO, ERR_SSL_…, UNABLE_TO_VERIFY_LEAF_SIGNATURE)
 * behind a ConnectError the client made up because the centre could not be reached or the TLS
 * handshake failed — as opposed to an error the centre answered.
 */
function transportCause(ce: ConnectError): Error | undefined {
  let cause: unknown = ce.cause;
  for (let depth = 0; cause instanceof Error && depth < 8; depth++) {
    if (typeof (cause as { code?: unknown }).code === 'string') return cause;
    cause = cause.cause;
  }
  return undefined;
}

/** A refusal by the centre's change threshold (core/plan/guard.ts): the response metadata says so. */
function isThresholdRefusal(ce: ConnectError): boolean {
  return ce.code === Code.FailedPrecondition && ce.metadata.get(REFUSAL_HEADER) === REFUSAL_CHANGE_THRESHOLD;
}

/** Connect codes as the statuses external-dns acts on; see WebhookError. */
export function fromConnectError(e: unknown): unknown {
  if (e instanceof WebhookError) return e;
  const ce = ConnectError.from(e);
  const transport = transportCause(ce);
  if (transport) return new WebhookError(503, `central dnsplane unreachable: ${transport.message}`);
  switch (ce.code) {
    case Code.Unauthenticated:
      return new WebhookError(401, `the central dnsplane refused the sidecar's token: ${ce.rawMessage}`);
    case Code.Unavailable:
    case Code.Aborted:
    case Code.DeadlineExceeded:
    case Code.ResourceExhausted:
      return new WebhookError(503, `central dnsplane: ${Code[ce.code]}: ${ce.rawMessage}`);
    case Code.FailedPrecondition:
      if (isThresholdRefusal(ce)) return new WebhookError(503, ce.rawMessage, undefined, true, ce.metadata.get(REFUSAL_ZONE_HEADER) ?? '');
      return new WebhookError(500, `central dnsplane: ${Code[ce.code]}: ${ce.rawMessage}`);
    case Code.InvalidArgument:
    case Code.PermissionDenied:
      return new WebhookError(500, ce.rawMessage, entryOf(ce.rawMessage));
    default:
      return new WebhookError(500, `central dnsplane: ${Code[ce.code]}: ${ce.rawMessage}`);
  }
}

function fromPb(e: PbEndpoint): Endpoint | undefined {
  const type = e.recordType.toUpperCase();
  if (!isRecordType(type)) return undefined;
  const out: Endpoint = { dnsName: e.dnsName, recordType: type, targets: [...e.targets], ttl: e.ttl };
  if (Object.keys(e.labels).length > 0) out.labels = { ...e.labels };
  return out;
}

function toPb(e: RawEndpoint) {
  // The labels normalize.ts keeps (the health check): the centre stores them.
  return { dnsName: e.dnsName, recordType: e.recordType, targets: e.targets, ttl: e.ttl, ...(e.labels ? { labels: e.labels } : {}) };
}

const ACTIONS: Record<number, ChangeAction> = {
  [PbChangeAction.CREATE]: 'create',
  [PbChangeAction.UPDATE]: 'update',
  [PbChangeAction.DELETE]: 'delete',
};

const STATUSES: Record<number, ZoneStatus> = {
  [ApplyStatus.APPLIED]: 'applied',
  [ApplyStatus.NO_CHANGES]: 'no_changes',
  [ApplyStatus.STALE]: 'stale',
  [ApplyStatus.FAILED]: 'failed',
  // A centre running with DNSPLANE_DRY_RUN sent nothing on purpose: a success for external-dns.
  [ApplyStatus.DRY_RUN]: 'dry_run',
  [ApplyStatus.REFUSED]: 'refused',
};

export function connectBackend(opts: ConnectBackendOptions): WebhookBackend {
  const { client } = opts;
  const scopeTtlMs = opts.scopeTtlMs ?? 60_000;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  let scope: { value: TenantScope; at: number } | undefined;
  const cache = new Map<string, { generation: bigint; endpoints: Endpoint[] }>();

  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      throw fromConnectError(e);
    }
  };

  const session: WebhookSession = {
    scope: () =>
      call(async () => {
        if (scope && Date.now() - scope.at < scopeTtlMs) return scope.value;
        const res = await client.listZones({}, { timeoutMs });
        // The centre tells the sidecar who it is, its zones and its suffixes: the domain filter is the
        // same as the central listener's.
        scope = { value: { tenant: res.tenant, zones: res.zones.map((z) => z.name), suffixes: res.suffixes }, at: Date.now() };
        return scope.value;
      }),

    records: () =>
      call(async () => {
        const known: Record<string, bigint> = {};
        for (const [zone, c] of cache) known[zone] = c.generation;
        const res = await client.records({ zones: [], knownGenerations: known, includeForeign: false }, { timeoutMs });
        const seen = new Set<string>();
        const out: Endpoint[] = [];
        for (const z of res.zones) {
          seen.add(z.zone);
          const cached = cache.get(z.zone);
          let endpoints: Endpoint[];
          if (z.notModified && cached) {
            endpoints = cached.endpoints;
          } else {
            endpoints = z.endpoints.map(fromPb).filter((e): e is Endpoint => e !== undefined);
            cache.set(z.zone, { generation: z.generation, endpoints });
          }
          out.push(...endpoints);
        }
        for (const zone of [...cache.keys()]) if (!seen.has(zone)) cache.delete(zone);
        return out;
      }),

    apply: (changes: RawChangeSet) =>
      call(async (): Promise<ApplyOutcome> => {
        const res = await client.apply(
          {
            source: {
              case: 'plan',
              value: {
                policy: Policy.SYNC,
                input: {
                  case: 'changes',
                  value: {
                    create: changes.create.map(toPb),
                    updateOld: changes.updateOld.map(toPb),
                    updateNew: changes.updateNew.map(toPb),
                    delete: changes.delete.map(toPb),
                  },
                },
              },
            },
          },
          { timeoutMs },
        );
        return {
          zones: res.zones.map((z) => ({
            zone: z.zone,
            status: STATUSES[z.status] ?? 'failed',
            calls: z.calls.length,
            conflicts: z.conflicts.flatMap((c): Conflict[] => {
              const endpoint = c.endpoint ? fromPb(c.endpoint) : undefined;
              return endpoint ? [{ action: ACTIONS[c.action] ?? 'update', endpoint, owner: c.owner, reason: c.reason }] : [];
            }),
            ...(z.error ? { error: z.error } : {}),
          })),
        };
      }),
  };

  return {
    mode: 'sidecar',
    async session() {
      return session;
    },
  };
}
