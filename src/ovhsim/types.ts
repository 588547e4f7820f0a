/**
 * Public types of the OVH simulator. See index.ts for what is modelled.
 */

/** A server's propagation lag (ovhsim/propagation.ts): milliseconds, a random range drawn per refresh, or never. */
export type Lag = number | { min: number; max: number } | 'never';

/** A record as given to the simulator (initial zones, direct edits). */
export interface SimRecordInit {
  /** Relative to the zone, '' for the apex. Stored lowercase. */
  subDomain: string;
  fieldType: string;
  /** As OVH stores it (TXT without surrounding quotes; one surrounding pair is stripped if given). */
  target: string;
  /** 0 (the default) means the zone default; 1..59 is stored as 60. */
  ttl?: number;
}

/** A record as the simulator holds it. `target` is the stored form (TXT unquoted). */
export interface SimRecord {
  /** OVH record id (a number above 2^32), as a decimal string. */
  id: string;
  zone: string;
  subDomain: string;
  fieldType: string;
  target: string;
  ttl: number;
}

/** A partial update of a record (direct edits; the API's PUT). */
export interface SimRecordPatch {
  subDomain?: string;
  target?: string;
  ttl?: number;
}

export interface SimCredentials {
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
}

/** The SOA fields GET /domain/zone/{z}/soa answers (serial aside) and the DNS server serves. */
export interface SimSoaSettings {
  /** Mailbox of the zone's contact, `user@host` form as OVH shows it. */
  email: string;
  refresh: number;
  retry: number;
  expire: number;
  /** Negative-caching TTL (the SOA MINIMUM field). */
  nxDomainTtl: number;
  /** TTL of the SOA record itself. */
  ttl: number;
}

/**
 * Facts about OVH that no public source confirmed (REFERENCE.md marks them "assumed") or that changed
 * over time. Every field has a default; override per simulator through SimOptions.behavior.
 */
export interface SimBehavior {
  /** Largest |X-Ovh-Timestamp - server time| in seconds before QUERY_TIME_OUT. Assumed: 300. */
  timestampWindowSeconds: number;
  /** Answers wrap TXT targets in double quotes, split in 255-char chunks (OVH since late 2025). false: the older raw form. */
  quoteTxtInAnswers: boolean;
  /** Status of a successful POST /refresh: 204 without body (OVH since Oct 2023), or 200 with a `null` body (before). */
  refreshStatus: 204 | 200;
  /** What the DNS server (and the export's $TTL) uses for records stored with ttl 0. OVH: 3600. */
  defaultTtl: number;
  /** The zone's name servers (GET zone `nameServers`, SOA MNAME is the first). */
  nameServers: string[];
  /** A new zone gets one apex NS record (ttl 0) per name server, as a zone created at OVH does. */
  apexNsRecords: boolean;
  /** `?subDomain=` with an empty value: 'ignore' treats it as absent (assumed), 'apex' filters the apex records. */
  emptySubDomainFilter: 'ignore' | 'apex';
  /** POST/PUT bodies with properties OVH does not know: true -> 400 (assumed), false -> ignored. */
  rejectUnknownProperties: boolean;
  /**
   * Automatic 429 (assumed; OVH documents no limit): more than `max` signed calls per consumer key within
   * `windowMs` are answered 429 with `Retry-After: retryAfterSeconds` (default 1). null: no limit (default).
   */
  rateLimit: { max: number; windowMs: number; retryAfterSeconds?: number } | null;
  /** First record id handed out; default 5_000_000_000 plus a random offset below 10^6. */
  firstRecordId: number | null;
  /**
   * How GET …/record answers a request in OVH's expanded list mode (`X-Pagination-Mode:
   * CachedObjectList-Pages`; the API schema marks the route `x-expanded-response: DomainZoneRecord`,
   * but whether the DNS route honours it is not proven — assumed):
   * - 'ignored' (default): the header is ignored, the answer is the array of ids, as without it;
   * - 'honoured': a page of full record objects, 1-based `X-Pagination-Number`, `X-Pagination-Size`
   *   records per page (see expandedListMaxPageSize); the answer carries `X-Pagination-Elements` (the
   *   total), `X-Pagination-Number` and `X-Pagination-Size` (the size used);
   * - 'refused': 400 Client::BadRequest.
   */
  expandedRecordLists: 'ignored' | 'honoured' | 'refused';
  /** Expanded lists: the largest page served, whatever size is asked (assumed); null: as asked. A request without X-Pagination-Size gets every record in one page. */
  expandedListMaxPageSize: number | null;
  /**
   * Expanded lists are cached server-side (OVH's "CachedObjectList"; the lifetime is assumed): per
   * consumer key and (path, query), the first request's list is kept this many seconds and later pages
   * slice it, stale or not, unless the request carries `Pragma: no-cache`, which rebuilds it. 0: never cached.
   */
  expandedListCacheSeconds: number;
  /** Prefix of X-Ovh-Queryid values (`EU.ext-1` gives `EU.ext-1.<hex>.<seq>`). */
  queryIdPrefix: string;
  soa: SimSoaSettings;
}

export interface SimOptions {
  /** Listen address for the API and the DNS server. Default '127.0.0.1'. */
  host?: string;
  /** HTTPS port; default 0 (ephemeral). */
  apiPort?: number;
  /** DNS port of the first name server, the same for UDP and TCP; default 0 (an ephemeral port free for both). */
  dnsPort?: number;
  /** Ports of the other name servers, by index (index 0 is dnsPort's); default 0 each. */
  dnsPorts?: number[];
  /**
   * How long each name server takes to answer a refresh (propagation.ts): ms, a range drawn per server
   * and per refresh, or 'never'. Default 0: within the refresh call. Changed while running through
   * `sim.propagation` (setLag per server, hold/release).
   */
  propagation?: Lag;
  /** Default: random ones, or the ones saved in stateFile. */
  credentials?: SimCredentials;
  /** Initial zones; their records are both draft and published. */
  zones?: Record<string, SimRecordInit[]>;
  /**
   * When set: the state (zones, drafts, published records, serials, next id, generated credentials) is
   * loaded from it at start if it exists — zones of `zones` that it lacks are added — and written
   * atomically (temp file + rename) after every change.
   */
  stateFile?: string;
  /** Default: a freshly generated self-signed certificate for 'localhost', '127.0.0.1' and '::1'. */
  tls?: { key: string; cert: string };
  /** GET /auth/time answers now + drift; timestamps are checked against it too. Default 0. */
  timeDriftSeconds?: number;
  /** Structured log sink; nothing is logged when absent. Never given the application secret. */
  log?: (msg: string, fields?: object) => void;
  /** Overrides of the assumed facts (see SimBehavior). */
  behavior?: Partial<SimBehavior>;
}

/** One API call as received. */
export interface SimCall {
  /** 1, 2, 3, … in order of reception. */
  seq: number;
  /** Reception time, ms since the epoch. */
  at: number;
  method: string;
  /** Path without the /1.0 prefix and without the query string, as sent (not percent-decoded). */
  path: string;
  query: Record<string, string>;
  /** The parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: unknown;
  /** Status sent; 0 when nothing was sent (dropped, hanging, or still in progress). */
  status: number;
  /** The X-Ovh-Queryid of the answer. */
  queryId: string;
  /** The request's paging headers, lower-case names, only those sent: x-pagination-* and pragma. */
  headers: Record<string, string>;
}
