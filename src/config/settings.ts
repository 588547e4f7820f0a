/**
 * Every setting with its default and its help, for `--help` and the README's configuration table;
 * loadConfig (config/config.ts) reads them.
 */
import { HEALTH_SETTINGS } from './health.js';

/** DNSPLANE_HEAP_GROWTH unset (server/heap.ts; bench/README.md, "Heap growth"). */
export const DEFAULT_HEAP_GROWTH = '25%';

/** The settings, for `--help` and the README's configuration table. */
export const SETTINGS: Array<{ name: string; default: string; help: string }> = [
  { name: 'DNSPLANE_LISTEN', default: '127.0.0.1:8080', help: 'host:port of the Connect/gRPC/gRPC-Web API (HTTP/1.1 and h2c)' },
  {
    name: 'DNSPLANE_WEBHOOK_LISTEN',
    default: '127.0.0.1:8888',
    help: 'host:port of the external-dns webhook protocol (HTTP Basic tenant:token); "off" to disable; an ephemeral port when DNSPLANE_LISTEN has port 0',
  },
  {
    name: 'DNSPLANE_DNS_LISTEN',
    default: '(off)',
    help: 'host:port of the DNS door (UPDATE signed with TSIG, queries, AXFR; UDP and TCP); unset: off, except in demo mode (127.0.0.1, a port kept across restarts); "off" to disable',
  },
  {
    name: 'DNSPLANE_DNS_RATE',
    default: '50',
    help: 'unsigned DNS messages per second one source address may send to the DNS door (burst twice that); more are dropped',
  },
  {
    name: 'DNSPLANE_DNS_UPDATE_RATE',
    default: '10',
    help: 'DNS UPDATEs per second one tenant may send to the DNS door (all its keys, from wherever); over it, REFUSED (counted, summarized in the log)',
  },
  { name: 'DNSPLANE_DNS_UPDATE_BURST', default: '50', help: 'DNS UPDATEs a tenant may send at once before DNSPLANE_DNS_UPDATE_RATE applies' },
  {
    name: 'DNSPLANE_DNS_UPDATE_WAIT',
    default: 'off',
    help: "a DNS UPDATE's NOERROR waits until its change is visible on the zone's authoritative servers, at most this long (e.g. 120s), and never past what the client waits (DNSPLANE_DNS_CLIENT_TIMEOUT); at the bound it answers NOERROR anyway, the change being applied. off: answer once published",
  },
  {
    name: 'DNSPLANE_DNS_CLIENT_TIMEOUT',
    default: '2s',
    help: "how long the DNS door's UPDATE clients wait for an answer: an UPDATE is answered 0.5 s before it, whatever DNSPLANE_DNS_UPDATE_WAIT says. 2s is miekg/dns's fixed timeout (cert-manager, external-dns); raise it only when every client waits longer (nsupdate -t, certbot, lego's RFC2136_DNS_TIMEOUT)",
  },
  {
    name: 'DATABASE_URL',
    default: '(embedded)',
    help: 'Postgres URL; unset: an embedded Postgres under DNSPLANE_DATA_DIR. With it, serve needs the OVH_* credentials (or DNSPLANE_DEMO=true)',
  },
  {
    name: 'DNSPLANE_DEMO',
    default: '',
    help: 'true: the demo (in-process OVH simulator, demo zone and tenants), also with DATABASE_URL; unset: the demo only when neither DATABASE_URL nor OVH_* is set; false: never',
  },
  { name: 'DNSPLANE_DATA_DIR', default: './.dnsplane', help: 'embedded Postgres data, simulator state and CA' },
  { name: 'DNSPLANE_ZONES', default: '(all)', help: 'comma list of zones to manage; unset: every zone of the OVH account' },
  { name: 'OVH_ENDPOINT', default: 'ovh-eu', help: 'ovh-eu, ovh-ca, ovh-us or an https://host:port URL' },
  { name: 'OVH_APPLICATION_KEY', default: '', help: 'OVH application key (the three OVH_* credentials: all or none; none and no DATABASE_URL: the demo)' },
  { name: 'OVH_APPLICATION_SECRET', default: '', help: 'OVH application secret (never logged)' },
  { name: 'OVH_CONSUMER_KEY', default: '', help: 'OVH consumer key (never logged)' },
  { name: 'OVH_CA_FILE', default: '', help: 'extra CA (PEM) to trust for the OVH endpoint, added to the system ones' },
  {
    name: 'DNSPLANE_OVH_RATE',
    default: '20',
    help: 'OVH requests per second for the OVH account (per application key), shared by every replica on the database',
  },
  { name: 'DNSPLANE_OVH_CONCURRENCY', default: '8', help: 'OVH calls in flight at most' },
  {
    name: 'DNSPLANE_SYNC_CONCURRENCY',
    default: '4',
    help: "zones read whole from OVH at once by first syncs (a new zone's first reader): more wait their turn in order, holding no database connection, never refused for waiting",
  },
  { name: 'DNSPLANE_OVH_TIMEOUT', default: '30s', help: 'OVH call timeout' },
  {
    name: 'DNSPLANE_OVH_EXPANDED_LISTS',
    default: 'auto',
    help: "auto, on or off: read a zone's records a page per call in OVH's expanded list mode (auto: try it, fall back to one GET per record if OVH does not answer it, and remember)",
  },
  { name: 'DNSPLANE_LOCK_TIMEOUT', default: '30s', help: 'how long an apply waits for its zone lock before Aborted' },
  {
    name: 'DNSPLANE_APPLY_BATCH',
    default: '100',
    help: 'an apply of more OVH operations than this goes in batches, each applied and published on its own, the zone lock released between them; 0: never',
  },
  {
    name: 'DNSPLANE_APPLY_COALESCE',
    default: '2s',
    help: 'applies of one zone waiting for its lock in this process are taken as one group published by one refresh (each keeps its own plan, journal row and result), at most DNSPLANE_APPLY_BATCH operations, taking no more applies once it has run this long; 0 or off: one refresh per apply',
  },
  {
    name: 'DNSPLANE_SHUTDOWN_TIMEOUT',
    default: '30s',
    help: 'on SIGTERM: the process exits within this; applies under way stop sending in time to roll back, and answer Unavailable',
  },
  { name: 'DNSPLANE_PLAN_TTL', default: '15m', help: 'how long a stored plan can be applied' },
  {
    name: 'DNSPLANE_PLAN_CONCURRENCY',
    default: '2',
    help: 'Plans (Plan, PlanAs) one tenant may have computing at once; one more is refused with RESOURCE_EXHAUSTED',
  },
  {
    name: 'DNSPLANE_READ_CACHE_BYTES',
    default: '(25% of the heap limit)',
    help: "what the Records cache keeps in memory at most (each zone's records at its generation, the answers cut from them, their encoded bytes, and the zones being read): a byte count, or with Ki, Mi or Gi; past it the least recently used is dropped and built again when asked. Unset: 25% of V8's heap limit (at least 128Mi; node's --max-old-space-size, or what the container's memory allows); the start log says what the managed zones would take and whether they fit",
  },
  {
    name: 'DNSPLANE_HEAP_GROWTH',
    default: DEFAULT_HEAP_GROWTH,
    help: "how far the process's heap may grow past what is live before a full collection: a percentage (peak heap = live × (1 + it)), or v8 for V8's own growth (up to 4× what is live). The default keeps a replica holding an estate near what it keeps; node's own --heap-growing-percent, when given, wins",
  },
  {
    name: 'DNSPLANE_DRIFT_INTERVAL',
    default: '5m',
    help: 'how often each zone is checked for changes made outside dnsplane (1 OVH call when none); 0 or off: never',
  },
  { name: 'DNSPLANE_LOG_LEVEL', default: 'info', help: 'fatal, error, warn, info, debug, trace' },
  {
    name: 'DNSPLANE_LOG_FORMAT',
    default: 'auto',
    help: 'json (one JSON object a line, for log collectors), pretty (human lines), or auto: pretty when stdout is a terminal, json otherwise',
  },
  { name: 'DNSPLANE_DRY_RUN', default: 'false', help: 'true: plans and applies run, the OVH calls applies would make are logged and returned, none is sent' },
  {
    name: 'DNSPLANE_CORS_ORIGINS',
    default: '',
    help: 'comma list of origins (https://host[:port]) whose browser pages may call the API (CORS); * for any; empty: none',
  },
  {
    name: 'DNSPLANE_MAX_CHANGE_PERCENT',
    default: '30',
    help: 'an apply updating or deleting more than this % of the record sets a tenant owns in a zone (when it owns 10 or more there) is refused unless forced; 0-100',
  },
  {
    name: 'DNSPLANE_HEADERS_TIMEOUT',
    default: '20s',
    help: 'a client must send complete request headers within this of connecting, or of its first byte on a kept-alive connection (both HTTP ports, HTTP/1.1 and h2c); a silent, half-sent or dripping request is closed (HTTP/1.1: 408)',
  },
  {
    name: 'DNSPLANE_REQUEST_TIMEOUT',
    default: '60s',
    help: 'a client must send its whole request, body included, within this of its start (both HTTP ports); else the connection is closed (h2: that stream is cancelled)',
  },
  {
    name: 'DNSPLANE_IDLE_TIMEOUT',
    default: '65s',
    help: 'an API connection (HTTP/1.1 keep-alive, or h2 session) with no request in flight is closed after this; the webhook port keeps at least 120s (external-dns reuses connections idle up to 90s)',
  },
  {
    name: 'DNSPLANE_MAX_CONNECTIONS',
    default: '1024',
    help: 'connections each HTTP port (API, webhook) holds at once; more are closed as they arrive (dnsplane_http_connections_refused_total, one summary log line per 10s)',
  },
  {
    name: 'DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS',
    default: '128',
    help: 'connections each HTTP port holds at once from one client address (behind a proxy or ingress, its address: raise this to fit); more are closed as they arrive',
  },
  {
    name: 'DNSPLANE_LOGIN_BURST',
    default: '20',
    help: 'failed logins a client address may make at once; then it is refused (429 / RESOURCE_EXHAUSTED, Retry-After) until it regains some',
  },
  { name: 'DNSPLANE_LOGIN_RATE', default: '1', help: 'failed logins per second a client address regains' },
  {
    name: 'DNSPLANE_TRUSTED_PROXIES',
    default: '',
    help: "comma list of CIDRs or addresses of the proxies in front of the API and webhook ports (an ingress, a load balancer): from them, the client's address is taken from a PROXY protocol header (v1 or v2) or DNSPLANE_CLIENT_ADDRESS_HEADER, and is what the login limiter, connection caps, logs, last seen and the journal use; unset: every peer is its own client, and such headers are ignored (a PROXY header is refused)",
  },
  {
    name: 'DNSPLANE_CLIENT_ADDRESS_HEADER',
    default: 'x-forwarded-for',
    help: 'the header the trusted proxies write the client into: x-forwarded-for, forwarded (RFC 7239) or none (PROXY protocol only); its rightmost address not itself a trusted proxy is the client. Name the one your proxies set: the other one passes through from the client unchecked',
  },
  {
    name: 'DNSPLANE_SECRETS_KEY',
    default: '',
    help: 'the key that seals secrets kept at rest (TSIG secrets, OVH application secrets): 32 random bytes in base64, e.g. `openssl rand -base64 32`; the same on every replica; never logged. Demo mode keeps one in its data dir',
  },
  {
    name: 'DNSPLANE_SECRETS_KEYS',
    default: '',
    help: 'instead of DNSPLANE_SECRETS_KEY, while its key is rotated: a comma list of such keys, the one that seals first, the others only open; `dnsplane secrets reseal` moves every secret to the first (docs/operations.md)',
  },
  {
    name: 'DNSPLANE_DNS_ADVERTISE',
    default: '',
    help: 'host:port where DNS clients (cert-manager, lego, certbot, nsupdate) reach the DNS listener, printed in the configuration `tenant tsig create` shows; unset: DNSPLANE_DNS_LISTEN',
  },
  {
    name: 'DNSPLANE_CNAME_RELATIVE_ZONES',
    default: '',
    help: 'comma list of zones whose in-zone CNAME targets are sent relative (like external-dns --ovh-enable-cname-relative)',
  },
  // The OVH API served per tenant at /ovh/1.0 on the API port (docs/ovh-api.md).
  {
    name: 'DNSPLANE_OVH_API_ADVERTISE',
    default: '',
    help: 'the URL tools reach the served OVH API at, ending in /ovh/1.0 (e.g. https://dnsplane.example.com/ovh/1.0), printed as OVH_ENDPOINT by `tenant ovh-key create`; unset: http://DNSPLANE_LISTEN/ovh/1.0 when that names a host',
  },
  {
    name: 'DNSPLANE_OVH_API_RATE',
    default: '50',
    help: "requests per second one tenant's tools may make to the served OVH API (all its keys together); over it: 429 with Retry-After, as OVH",
  },
  { name: 'DNSPLANE_OVH_API_BURST', default: '500', help: 'requests a tenant may make at once to the served OVH API before DNSPLANE_OVH_API_RATE applies' },
  { name: 'DNSPLANE_OVH_API_DRAFT_TTL', default: '1h', help: 'a write staged through the served OVH API that no refresh publishes within this is dropped' },
  // Visibility: each publish proved on the zone's authoritative servers (core/probe/, docs/ARCHITECTURE.md "Visibility").
  {
    name: 'DNSPLANE_AUTHORITATIVE_SERVERS',
    default: "(the zone's name servers)",
    help: "comma list of host[:port] (port 53 by default) the prober asks for every zone, instead of each zone's name servers as OVH lists them (GET /domain/zone/{zone}, once per zone and process): split horizons, tests",
  },
  {
    name: 'DNSPLANE_VISIBLE_TIMEOUT',
    default: '15m',
    help: 'an apply not answered as published by every authoritative server within this after its refresh is not_visible (naming the servers and names still behind), or unverified when no server could be asked',
  },
  // Tenant liveness (core/withdrawals/liveness.ts, docs/operations.md "Silent tenants").
  {
    name: 'DNSPLANE_SILENT_CHECK_INTERVAL',
    default: '10s',
    help: 'how often one replica looks for tenants silent past their withdraw_after (`tenant set NAME --withdraw-after`) and withdraws their targets of shared record sets; 0/off: never',
  },
  {
    name: 'DNSPLANE_LAST_SEEN_WRITE',
    default: '1m',
    help: "a tenant's latest call (last_seen_at) is written at most this often per replica; a tenant is silent once withdraw_after plus this has passed",
  },
  // Workload tokens (core/credentials/issuer-keys.ts, docs/credentials.md "Workload identity").
  {
    name: 'DNSPLANE_JWKS_REFRESH',
    default: '10m',
    help: "a trusted issuer's keys are fetched again (in the background, the cached ones still used) once this old; Cache-Control is not read",
  },
  {
    name: 'DNSPLANE_JWKS_COOLDOWN',
    default: '30s',
    help: "a token with a key id the cached keys lack fetches its issuer's keys again at once, but at most this often per issuer (a flood of made-up key ids costs the issuer one request per cooldown)",
  },
  {
    name: 'DNSPLANE_JWKS_MAX_AGE',
    default: '24h',
    help: 'keys of an issuer that could not be fetched for this long are no longer used: an issuer that is down leaves its cached keys working until then',
  },
  { name: 'DNSPLANE_PROBE_QUERIES', default: '16', help: 'DNS questions the prober has in flight at most, for the whole process' },
  {
    name: 'DNSPLANE_PROBE_BACKOFF',
    default: '1s..30s',
    help: 'the wait between two rounds of questions about one refresh: from the first value, 1.25 times longer each round, up to the second',
  },
  // Health checks per target (core/health/, docs/failover.md).
  ...HEALTH_SETTINGS,
  {
    name: 'DNSPLANE_SIM_PROPAGATION',
    default: '2s..8s',
    help: "demo mode: each of the simulator's two name servers answers a refresh after a lag drawn in this range (or a fixed duration; 0: at once; never)",
  },
];
