/**
 * The keys of the JWT issuers tenants trust (core/credentials/workload-tokens.ts verifies with them),
 * kept per issuer as the careful systems keep them and not as the troubles their users report:
 *
 * - An issuer's keys come only from its own source (store/workload-trust.ts IssuerSource): its
 *   discovery document's jwks_uri (whose `issuer` must be the issuer exactly), a JWKS URL, or a JWKS
 *   uploaded. Only issuers some tenant trusts are ever asked: a token naming another issuer is refused
 *   before anything is fetched, so a token cannot make dnsplane fetch a URL it chose.
 * - Keys fetched are used for `refreshMs`, then fetched again in the background while the cached ones
 *   go on working; whatever Cache-Control says (it is not read), keys not fetched successfully for
 *   `maxAgeMs` are no longer used. An issuer that is down leaves its cached keys working until then,
 *   logged (a warning per failure streak) and counted (dnsplane_jwks_fetches_total, and
 *   dnsplane_jwks_age_seconds at each scrape).
 * - A token whose `kid` the cached keys lack fetches the keys again at once (a key rotated at the
 *   issuer works at once), but at most once per `cooldownMs` per issuer, one fetch at a time: a flood of
 *   made-up kids costs the issuer one request per cooldown.
 * - Only public asymmetric keys are kept (RSA, EC, OKP): a symmetric ("oct") key in a JWKS is dropped,
 *   so no token is ever checked with an HMAC keyed by anything the issuer published.
 * - A change of the issuer's source (its row's version) drops what was kept for the older one.
 */
import https from 'node:https';
import { createLocalJWKSet, errors as joseErrors, type JWK, type JWTHeaderParameters, type FlattenedJWSInput } from 'jose';
import type { Logger } from 'pino';
import { messageOf } from '../../lib/error-message.js';
import type { TrustedIssuer } from '../../store/index.js';
import { IssuerUnavailableError, WorkloadTokenError } from '../errors.js';

export interface IssuerKeysOptions {
  /** Keys older than this are fetched again (in the background). Default 10 min. */
  refreshMs?: number;
  /** An unknown kid, or a failed fetch, fetches again at most this often per issuer. Default 30 s. */
  cooldownMs?: number;
  /** Keys not fetched successfully for this long are not used. Default 24 h. */
  maxAgeMs?: number;
  /** Each HTTPS request to an issuer. Default 5 s. */
  timeoutMs?: number;
  log?: Logger;
  /** Each fetch of an issuer's keys (dnsplane_jwks_fetches_total). */
  onFetch?: (issuer: string, result: 'ok' | 'failed') => void;
  clock?: () => number;
}

type KeySet = ReturnType<typeof createLocalJWKSet>;
/** What jose verifies with (a WebCrypto key). */
type Key = Awaited<ReturnType<KeySet>>;

interface Entry {
  version: string;
  keys?: KeySet;
  /** When the keys were last fetched successfully (ms). */
  fetchedAt?: number;
  /** When a fetch last started (ms), successful or not: the cooldown counts from it. */
  attemptAt?: number;
  lastError?: string;
  /** The discovery document's jwks_uri, once read. */
  jwksUri?: string;
  fetching?: Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;
const ASYMMETRIC_KTY = new Set(['RSA', 'EC', 'OKP']);
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];

/** The public asymmetric keys of a JWKS (others dropped), or an Error saying what is wrong with it. */
export function publicKeysOf(jwks: unknown): { keys: JWK[] } {
  if (typeof jwks !== 'object' || jwks === null || !Array.isArray((jwks as { keys?: unknown }).keys)) throw new Error('not a JWKS: no "keys" array');
  const keys = (jwks as { keys: unknown[] }).keys.filter(
    (k): k is JWK =>
      typeof k === 'object' &&
      k !== null &&
      ASYMMETRIC_KTY.has(String((k as JWK).kty)) &&
      !PRIVATE_MEMBERS.some((m) => m in k) &&
      ((k as JWK).use === undefined || (k as JWK).use === 'sig'),
  );
  if (keys.length === 0) throw new Error('no public signing key (RSA, EC or OKP) in the JWKS');
  return { keys };
}

/** GET url, its JSON body; https only, `ca` PEMs trusted instead of the system's, no redirect followed. */
export function getJson(url: string, ca: string | undefined, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    if (u.protocol !== 'https:') return reject(new Error(`${url}: only https is fetched`));
    // No agent: the global one may carry a secure context of its own (ovh/client/ca-trust.ts) that would
    // override `ca`; fetches are rare enough to open a connection each.
    const req = https.get(u, { agent: false, timeout: timeoutMs, headers: { accept: 'application/json' }, ...(ca ? { ca } : {}) }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`${url} answered ${res.statusCode}`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY_BYTES) req.destroy(new Error(`${url}: more than ${MAX_BODY_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new Error(`${url}: not JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** {issuer}/.well-known/openid-configuration (OpenID Connect Discovery 1.0, section 4). */
export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
}

export class IssuerKeys {
  private readonly entries = new Map<string, Entry>();
  readonly refreshMs: number;
  readonly cooldownMs: number;
  readonly maxAgeMs: number;
  private readonly timeoutMs: number;
  private readonly clock: () => number;

  constructor(private readonly opts: IssuerKeysOptions = {}) {
    this.refreshMs = opts.refreshMs ?? 10 * 60_000;
    this.cooldownMs = opts.cooldownMs ?? 30_000;
    this.maxAgeMs = opts.maxAgeMs ?? 24 * 3600_000;
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.clock = opts.clock ?? Date.now;
  }

  private entry(issuer: TrustedIssuer): Entry {
    let e = this.entries.get(issuer.issuer);
    if (!e || e.version !== issuer.version) {
      e = { version: issuer.version };
      this.entries.set(issuer.issuer, e);
    }
    return e;
  }

  /**
   * The key a token of `issuer` with this header is verified with (jose's key function).
   * WorkloadTokenError('unknown_key') when the issuer has no such key; IssuerUnavailableError when no
   * usable keys could be had.
   */
  async keyFor(issuer: TrustedIssuer, header: JWTHeaderParameters, token: FlattenedJWSInput): Promise<Key> {
    const e = this.entry(issuer);
    if (issuer.jwks) {
      e.keys ??= createLocalJWKSet(publicKeysOf(issuer.jwks));
      return this.select(e, header, token, 'the JWKS uploaded for this issuer lacks it (upload the current one: dnsplane tenant trust … --jwks-file)');
    }
    const now = this.clock();
    const usable = () => e.keys !== undefined && e.fetchedAt !== undefined && this.clock() - e.fetchedAt <= this.maxAgeMs;
    if (!usable()) {
      await this.fetch(issuer, e, true);
      if (!usable()) {
        throw new IssuerUnavailableError(
          `workload token not verified: the keys of issuer "${issuer.issuer}" could not be fetched${e.lastError ? ` (${e.lastError})` : ''}; retry later`,
        );
      }
    } else if (now - e.fetchedAt! >= this.refreshMs) {
      void this.fetch(issuer, e, false);
    }
    try {
      return await this.select(e, header, token);
    } catch (err) {
      if (!(err instanceof WorkloadTokenError) || err.rule !== 'unknown_key') throw err;
      // A key the issuer may have just added: fetched again now, at most once per cooldown.
      const fetched = await this.fetch(issuer, e, true);
      const why = e.lastError
        ? `the issuer's keys could not be fetched again (${e.lastError})`
        : fetched
          ? 'the issuer does not publish it'
          : `not among the issuer's keys (fetched again at most every ${Math.round(this.cooldownMs / 1000)} s)`;
      return this.select(e, header, token, why);
    }
  }

  private async select(e: Entry, header: JWTHeaderParameters, token: FlattenedJWSInput, why?: string): Promise<Key> {
    try {
      return await e.keys!(header, token);
    } catch (err) {
      if (err instanceof joseErrors.JWKSNoMatchingKey) {
        const kid = header.kid === undefined ? 'no kid' : `kid ${JSON.stringify(String(header.kid).slice(0, 100))}`;
        throw new WorkloadTokenError('unknown_key', `unknown key (${kid}, ${header.alg})${why ? `: ${why}` : ''}`);
      }
      if (err instanceof joseErrors.JWKSMultipleMatchingKeys)
        throw new WorkloadTokenError('unknown_key', "several of the issuer's keys match and the token names no kid");
      throw err;
    }
  }

  /**
   * Fetches the issuer's keys unless a fetch is under way (then waits for it when `wait`) or the
   * cooldown runs; whether a fetch ran (or was waited for).
   */
  private async fetch(issuer: TrustedIssuer, e: Entry, wait: boolean): Promise<boolean> {
    if (e.fetching) {
      if (wait) await e.fetching;
      return true;
    }
    if (e.attemptAt !== undefined && this.clock() - e.attemptAt < this.cooldownMs) return false;
    e.attemptAt = this.clock();
    e.fetching = this.load(issuer, e).finally(() => {
      e.fetching = undefined;
    });
    if (wait) await e.fetching;
    return true;
  }

  private async load(issuer: TrustedIssuer, e: Entry): Promise<void> {
    try {
      if (!issuer.jwksUrl && !e.jwksUri) e.jwksUri = await this.discover(issuer);
      const url = issuer.jwksUrl ?? e.jwksUri!;
      const keys = createLocalJWKSet(publicKeysOf(await getJson(url, issuer.caPem, this.timeoutMs)));
      if (this.entries.get(issuer.issuer) !== e) return; // the source changed meanwhile
      e.keys = keys;
      e.fetchedAt = this.clock();
      if (e.lastError) this.opts.log?.info({ issuer: issuer.issuer }, "a trusted issuer's keys could be fetched again");
      e.lastError = undefined;
      this.opts.onFetch?.(issuer.issuer, 'ok');
    } catch (err) {
      const first = e.lastError === undefined;
      e.lastError = messageOf(err);
      // Found again at the next fetch: the document may have moved.
      if (!issuer.jwksUrl) e.jwksUri = undefined;
      this.opts.onFetch?.(issuer.issuer, 'failed');
      if (first) {
        const age = e.fetchedAt === undefined ? undefined : Math.round((this.clock() - e.fetchedAt) / 1000);
        this.opts.log?.warn(
          {
            issuer: issuer.issuer,
            err: e.lastError,
            keysAgeSeconds: age,
            usableForSeconds: age === undefined ? 0 : Math.max(0, Math.round(this.maxAgeMs / 1000) - age),
          },
          age === undefined
            ? "a trusted issuer's keys could not be fetched: its tokens are refused until they can"
            : "a trusted issuer's keys could not be fetched: its cached keys go on working until they are too old",
        );
      }
    }
  }

  private async discover(issuer: TrustedIssuer): Promise<string> {
    const doc = await getJson(discoveryUrl(issuer.issuer), issuer.caPem, this.timeoutMs);
    const d = (typeof doc === 'object' && doc !== null ? doc : {}) as { issuer?: unknown; jwks_uri?: unknown };
    if (d.issuer !== issuer.issuer) throw new Error(`the discovery document names issuer ${JSON.stringify(d.issuer)}, not "${issuer.issuer}"`);
    if (typeof d.jwks_uri !== 'string' || !d.jwks_uri.startsWith('https://')) throw new Error('the discovery document has no https jwks_uri');
    return d.jwks_uri;
  }

  /** Per issuer whose keys were fetched: how old they are and whether the last fetch failed (metrics). */
  stats(): Array<{ issuer: string; ageSeconds: number; failing: boolean }> {
    const now = this.clock();
    return [...this.entries]
      .filter(([, e]) => e.fetchedAt !== undefined)
      .map(([issuer, e]) => ({ issuer, ageSeconds: (now - e.fetchedAt!) / 1000, failing: e.lastError !== undefined }));
  }
}

declare module '../context.js' {
  interface CoreContext {
    /**
     * The keys of the JWT issuers tenants trust (this file), for workload tokens. Absent: one per pool
     * with the default refresh, cooldown and bound.
     */
    issuerKeys?: IssuerKeys;
  }
}
