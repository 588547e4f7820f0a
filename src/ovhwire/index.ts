/**
 * OVH's API as it is on the wire, pure (no I/O, nothing of ours imported): the request signature,
 * the error answers, the record rules and the record's JSON, the DNS routes. Both sides that answer
 * as OVH use it — the simulator (ovhsim/) and the OVH API dnsplane serves per tenant (ovhapi/) — and
 * the OVH client (ovh/) signs with it. Knowledge that both ends need lives here once, so that the
 * simulator and the served API cannot drift apart and neither imports the other.
 */
export * from './errors.js';
export * from './paging.js';
export * from './records.js';
export * from './routes.js';
export * from './signature.js';
