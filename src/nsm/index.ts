/**
 * NSM domain publishing: a domain's exposed services -> the SRV + A/AAAA records NSM resolves, as
 * core plan/apply calls. Imports core and dns only; the Connect handler is api/nsm-service.ts.
 */
export * from './spec.js';
export * from './publish.js';
