/**
 * The policies a tenant's request is diffed under (external-dns's --policy), each a small value of
 * one type: what it lets the request do to a record set that exists. A change a policy does not
 * allow is a conflict naming the policy, never dropped in silence.
 * - sync: create, update and delete (and a desired state deletes the own sets it leaves out);
 * - upsert-only: create and update, never delete;
 * - create-only: create only, never update nor delete.
 */
import type { Policy } from './types.js';

export const REASON_CREATE_ONLY = 'exists; policy create-only';

export interface PolicyRules {
  readonly policy: Policy;
  /** Why it refuses to change an existing set; undefined: it allows it. */
  readonly refusesUpdate?: string;
  /** Why it refuses to delete a set; undefined: it allows it (then a desired state deletes what it leaves out). */
  readonly refusesDelete?: string;
}

const RULES: Readonly<Record<Policy, PolicyRules>> = {
  sync: { policy: 'sync' },
  'upsert-only': { policy: 'upsert-only', refusesDelete: 'policy upsert-only never deletes' },
  'create-only': { policy: 'create-only', refusesUpdate: REASON_CREATE_ONLY, refusesDelete: 'policy create-only never deletes' },
};

/** The rules of a policy. */
export function policyRules(policy: Policy): PolicyRules {
  return RULES[policy];
}
