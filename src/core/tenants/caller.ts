/**
 * Who called, beyond the tenant: a tenant authenticated by a workload token (a Kubernetes projected
 * ServiceAccount token, a SPIRE JWT-SVID; core/credentials/workload-tokens.ts) carries the issuer and
 * subject that proved it, so that the journal, "last seen" and the console name the subject. The
 * carrier is the tenant object itself (a copy with `workload` set), so every door and use case that
 * takes a Tenant takes it unchanged; a tenant read from the database or a static token has none.
 */
import type { Tenant } from '../../store/index.js';

export interface WorkloadIdentity {
  /** The token's iss, exactly as trusted. */
  issuer: string;
  /** The token's sub, exactly as trusted. */
  subject: string;
  /** The trusted subject's row (store/workload-trust.ts): where its "last seen" is written. */
  bindingId: string;
  /** The token's exp: the verified token is kept until then. */
  expiresAt: Date;
}

/** A tenant as a workload token authenticated it. */
export type Caller = Tenant & { readonly workload?: WorkloadIdentity };

/** The workload identity a tenant object carries, if it was authenticated by a workload token. */
export function workloadOf(t: Tenant): WorkloadIdentity | undefined {
  return (t as Caller).workload;
}

/** The tenant as the workload `w` acting as it. */
export function asWorkload(t: Tenant, w: WorkloadIdentity): Caller {
  return { ...t, workload: w };
}

/** "workload SUBJECT of ISSUER" in the journal's words (an apply's summary), or undefined for a static token. */
export function workloadOrigin(t: Tenant): string | undefined {
  const w = workloadOf(t);
  return w ? `by workload ${w.subject} (issuer ${w.issuer})` : undefined;
}
