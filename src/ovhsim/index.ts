/**
 * ovhsim — a faithful simulator of OVHcloud's DNS API (/1.0, over HTTPS) plus an authoritative DNS server
 * serving what was published. The ground truth of every integration test and benchmark of dnsplane; it
 * imports nothing of dnsplane (in particular never src/ovh/, the client side).
 *
 * ```ts
 * const sim = await OvhSimulator.start({ zones: { 'example.test': [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }] } });
 * trustExtraCas([sim.caPem]);   // src/ovh/client/ca-trust.ts: @ovhcloud/node-ovh uses the global agent
 * const client = ovh({ host: '127.0.0.1', port: sim.apiPort, appKey: sim.credentials.applicationKey, … });
 * …
 * await sim.stop();
 * ```
 *
 * MODELLED (REFERENCE.md sections 1 and 2)
 * - HTTPS only, on a generated self-signed certificate (`caPem`); base path /1.0.
 * - GET /auth/time: unsigned, a bare JSON integer (now + timeDriftSeconds).
 * - Every other call signed as @ovhcloud/node-ovh signs: X-Ovh-Application, X-Ovh-Consumer,
 *   X-Ovh-Timestamp, X-Ovh-Signature = "$1$" + sha1_hex(AS+CK+METHOD+URL+BODY+TIMESTAMP joined by "+"),
 *   URL = https://host[:port]/1.0/path?query — both with and without the port are accepted (the Node
 *   client drops the port), BODY the exact bytes sent. Errors in OVH's bodies: INVALID_KEY 403,
 *   INVALID_CREDENTIAL 403, INVALID_SIGNATURE 400, QUERY_TIME_OUT 400 (|timestamp - server time| > 300 s).
 * - Every answer carries X-Ovh-Queryid (unique) and, when it has a body, a JSON content type.
 * - Routes: GET /domain/zone; GET /domain/zone/{z}; GET|POST …/record (GET filters ?fieldType= exact and
 *   ?subDomain= case-insensitive, answers ids only); GET|PUT|DELETE …/record/{id} (PUT and DELETE: 200,
 *   empty body; PUT with fieldType/id/zone: 400 "Try to alter read-only properties: …"); POST …/refresh
 *   (204, no body); GET …/soa; GET …/export (a JSON string: BIND zone file of the draft, no ids);
 *   GET …/status ({isDeployed, errors, warnings}). Errors: unknown zone 404 "This service does not
 *   exist"; unknown record 404 "The requested object (id = N) does not exist"; bad input 400
 *   Client::BadRequest; unknown route 404 "Got an invalid (or empty) URL"; known route, other method 405.
 * - Draft vs published: record calls edit the draft; /refresh copies it to the published zone and bumps
 *   the SOA serial (YYYYMMDDnn, strictly increasing). The DNS servers serve the published zone only.
 * - Two authoritative servers per zone (the zone's nameServers, dns1.sim.test and ns1.sim.test, each on
 *   its own port: dnsServers), each answering a refresh after its own lag (propagation.ts: 0 by
 *   default; a range drawn per server and refresh; never; held until released).
 * - Record ids: JSON numbers above 2^32 (5_000_000_000 + random offset, then +1).
 * - Field types: OVH's list (A … TXT, HTTPS, SVCB); others 400. subDomain stored lowercase; underscores
 *   refused for A/AAAA/CNAME ("Invalid domain name, underscore not allowed"); A targets must be IPv4,
 *   AAAA IPv6; MX/SRV/CAA targets must parse; host targets must look like host names.
 * - TTL: 0 = zone default (answered 0 by the API, served 3600 by DNS); 1..59 stored as 60; negative 400.
 * - TXT: stored as given minus one pair of surrounding quotes; empty 400; answers wrap it in quotes,
 *   split `"…" "…"` in 255-character chunks when longer.
 * - Duplicates (same subDomain, fieldType, target) are allowed.
 * - A new zone starts with apex NS records for its name servers (ttl 0), as at OVH.
 * - OVH's known bugs, as injectable faults: POST …/record answering id 0 (`idZero`), a record 404ing
 *   right after creation (a `status: 404` rule on GET …/record/{id}), 408 with an HTML body, reset
 *   connections, a POST that timed out after being done (`applyThenDrop`). See faults.ts.
 * - A call log (calls(), writes()) with each request's paging headers; request handling is atomic per
 *   call (synchronous state changes).
 * - Optional persistence (stateFile), written atomically after every change.
 *
 * ASSUMED (no public source; configurable through SimOptions.behavior, see SimBehavior)
 * - The 300 s timestamp window and QUERY_TIME_OUT's message "Query out of time".
 * - Missing auth headers: 403 NOT_CREDENTIAL "You must login first".
 * - 429 exists at all (REFERENCE: assumed): only through faults or behavior.rateLimit (off by default).
 * - `?subDomain=` with an empty value is treated as absent (behavior.emptySubDomainFilter).
 * - Unknown properties in POST/PUT bodies are refused with 400 (behavior.rejectUnknownProperties).
 * - TXT quoting in answers (since late 2025) and the 204 of /refresh (since Oct 2023) can be turned back
 *   to the older behaviours (quoteTxtInAnswers, refreshStatus).
 * - Expanded record lists (`X-Pagination-Mode: CachedObjectList-Pages` on GET …/record): ignored (ids,
 *   the default), honoured (pages of full records: 1-based X-Pagination-Number, X-Pagination-Size,
 *   answer headers X-Pagination-Elements/-Number/-Size; an optional largest page; a server-side list
 *   cache per caller and query that only `Pragma: no-cache` bypasses) or refused (400):
 *   behavior.expandedRecordLists, expandedListMaxPageSize, expandedListCacheSeconds; switchable while
 *   running (setBehavior).
 * - Name servers dns1.sim.test / ns1.sim.test, SOA values (email tech@sim.test, refresh 86400,
 *   retry 3600, expire 3600000, nxDomainTtl 300, ttl 3600), the 405 answer shape, error messages for
 *   bad input other than the ones quoted above.
 *
 * NOT MODELLED
 * - Other OVH routes (PUT soa, zone import, DNSSEC, dynHost, redirections, tasks), OAuth2, the consumer
 *   key's access rules (NOT_GRANTED_CALL), "only one pending refresh" (refresh is instantaneous), CNAME
 *   exclusivity checks (OVH's exact rules are unknown), LOC/NAPTR/SSHFP/TLSA/HTTPS/SVCB on the DNS side
 *   (stored and listed by the API, not served).
 */
export { OvhSimulator, DEFAULT_BEHAVIOR, type SimNameServer } from './simulator.js';
export { Propagation, parseLag, type Delivery, type Lag, type ServedZone } from './propagation.js';
export type { FaultEffect, FaultHandle, FaultRule, SimFaults } from './faults.js';
export type {
  SimBehavior,
  SimCall,
  SimCredentials,
  SimOptions,
  SimRecord,
  SimRecordInit,
  SimRecordPatch,
  SimSoaSettings,
} from './types.js';
