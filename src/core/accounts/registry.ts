/**
 * The OVH accounts this replica talks to (issue 44): `default` (the OVH_* variables: the root client
 * the router extends) and every row of ovh_accounts, each with its own client (its endpoint, its
 * credentials, its budget shared by the replicas at its own rate), and which account each zone is in.
 * Loaded at start; one account re-read when NOTIFY dnsplane_account names it (add, rotate, disable,
 * enable, remove on any replica), so a rotation is in effect everywhere within a notification's
 * delivery, with no restart; everything re-read when the listener comes back.
 *
 * Each account has a state, from its last call: `ok`, `refused` (OVH refused its credentials: 403 or a
 * signature refused, with OVH's reason), `down` (no answer, or 5xx), `disabled`, `removed` (its zones
 * stay, their journal theirs, until another account takes them), `unreadable` (its sealed credentials
 * do not open here). Only its zones are unavailable: /readyz, ListZones and
 * dnsplane_ovh_account_available say which and why.
 */
import type { OvhApi } from '../../ovh/client.js';
import type { OvhCredentials } from '../../ovh/client/signed-request.js';
import { parseOvhEndpoint, type OvhEndpoint } from '../../ovh/endpoint.js';
import { OvhError } from '../../ovh/errors.js';
import { messageOf } from '../../lib/error-message.js';
import * as store from '../../store/index.js';
import type { SecretBox } from '../keys/secrets.js';
import { openCredentials } from './credentials.js';

export type AccountStatus = 'ok' | 'refused' | 'down' | 'disabled' | 'removed' | 'unreadable';

export interface AccountState {
  name: string;
  status: AccountStatus;
  /** Why it is not `ok` (OVH's reason, the error), never a secret. */
  reason?: string;
}

/** Asks OVH the account's zones with its credentials, one call (server/start-core.ts: no retries, no budget). */
export type ProveCredentials = (endpoint: OvhEndpoint, credentials: OvhCredentials) => Promise<string[]>;

/** What accounts need of the context (CoreContext.accounts): the registry and how to prove credentials. */
export interface AccountsContext {
  registry: OvhAccounts;
  prove: ProveCredentials;
}

/** A client made for an account: it and what to release when the account is rebuilt or removed. */
export interface AccountClient {
  client: OvhApi;
  close(): void;
}

export interface AccountTarget {
  name: string;
  endpoint: OvhEndpoint;
  credentials: OvhCredentials;
  /** Calls per second; undefined: DNSPLANE_OVH_RATE. */
  rate?: number;
}

export interface OvhAccountsOptions {
  pool: store.Queryable;
  secrets?: SecretBox;
  /** Builds an account's client (server/start-core.ts: the same client as the default's, its own budget). */
  clientOf(target: AccountTarget): AccountClient;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

interface Entry {
  row: store.OvhAccountRow;
  made?: AccountClient;
  state: AccountState;
}

/** A call for a zone whose account cannot call OVH now (disabled, removed, unreadable). */
export class AccountUnavailableError extends OvhError {
  constructor(
    readonly account: string,
    zone: string,
    why: string,
  ) {
    super('GET', `/domain/zone/${zone}`, 0, 'unavailable', `zone ${zone} is in OVH account "${account}", which is ${why}`);
  }
}

/** "OVH account NAME STATUS: REASON". */
function describe(s: AccountState): string {
  return `OVH account ${s.name} ${s.status}${s.reason ? `: ${s.reason}` : ''}`;
}

/** How long a replaced client's budget is kept for the calls it still has under way. */
const RETIRE_MS = 30_000;

export class OvhAccounts {
  private readonly entries = new Map<string, Entry>();
  /** zone -> account, for the zones not in `default`. */
  private zones = new Map<string, string>();
  private defaultState: AccountState = { name: store.DEFAULT_ACCOUNT, status: 'ok' };
  /** Replaced clients waiting to be closed (close() closes them at once). */
  private readonly retiring = new Set<() => void>();
  /** The last read of the accounts queued (inTurn). */
  private turn: Promise<void> = Promise.resolve();

  constructor(private readonly opts: OvhAccountsOptions) {}

  /** Every account and every zone's account, read again (start, and a listener back). */
  load(): Promise<void> {
    return this.inTurn(async () => {
      const rows = await store.listOvhAccountsWithSecrets(this.opts.pool);
      const names = new Set(rows.map((r) => r.name));
      for (const name of [...this.entries.keys()]) if (!names.has(name)) this.drop(name);
      for (const row of rows) this.install(row);
      this.zones = await store.zoneAccounts(this.opts.pool);
    });
  }

  /** One account read again (NOTIFY dnsplane_account), and the zones' accounts with it. */
  reload(name: string): Promise<void> {
    return this.inTurn(async () => {
      const row = await store.getOvhAccount(this.opts.pool, name);
      if (row) this.install(row);
      else this.drop(name);
      this.zones = await store.zoneAccounts(this.opts.pool);
    });
  }

  /**
   * Reads one after the other, so that a read started later (after a later change) is installed later:
   * a disable and an enable heard back to back never leave the first one's row in place.
   */
  private inTurn(read: () => Promise<void>): Promise<void> {
    const next = this.turn.then(read);
    this.turn = next.catch(() => undefined);
    return next;
  }

  /** The account `zone` is in. */
  accountOf(zone: string): string {
    return this.zones.get(zone) ?? store.DEFAULT_ACCOUNT;
  }

  /**
   * The client for `zone`'s calls: undefined for `default`'s zones (the root client makes them);
   * AccountUnavailableError when its account is disabled, removed or its credentials do not open.
   */
  clientFor(zone: string): { name: string; client?: OvhApi } {
    const name = this.zones.get(zone);
    if (name === undefined) return { name: store.DEFAULT_ACCOUNT };
    const e = this.entries.get(name);
    if (!e) throw new AccountUnavailableError(name, zone, 'removed: add it again, or add the account that holds the zone now');
    if (!e.made) throw new AccountUnavailableError(name, zone, `${e.state.status}${e.state.reason ? ` (${e.state.reason})` : ''}`);
    return { name, client: e.made.client };
  }

  /** A call of the account answered (whatever the answer but a refusal or no answer: OVH is there and knows it). */
  succeeded(name: string): void {
    const s = this.stateOf(name);
    if (s && (s.status === 'refused' || s.status === 'down')) this.setState(name, { name, status: 'ok' });
  }

  /** A call of the account failed: its credentials refused, or its endpoint down, marks it so. */
  failed(name: string, e: unknown): void {
    if (e instanceof AccountUnavailableError || !(e instanceof OvhError)) return;
    if (e.kind === 'auth')
      this.setState(name, { name, status: 'refused', reason: `OVH refused its credentials: HTTP ${e.status}${e.ovhMessage ? ` ${e.ovhMessage}` : ''}` });
    else if (e.kind === 'network' || e.kind === 'unavailable')
      this.setState(name, {
        name,
        status: 'down',
        reason: `its endpoint is down: ${e.status === 0 ? 'no answer' : `HTTP ${e.status}`}${e.ovhMessage ? ` (${e.ovhMessage})` : ''}`,
      });
    else this.succeeded(name);
  }

  /** Every account's state, `default` first. */
  states(): AccountState[] {
    return [this.defaultState, ...[...this.entries.values()].map((e) => e.state).sort((a, b) => a.name.localeCompare(b.name))];
  }

  /** The zones of each account this replica knows (`default`'s are not listed: every zone not named here). */
  zonesOf(name: string): string[] {
    return [...this.zones]
      .filter(([, a]) => a === name)
      .map(([z]) => z)
      .sort();
  }

  /** The application key this replica calls the account with (a rotation's proof); undefined: no such account here. */
  applicationKeyOf(name: string): string | undefined {
    return this.entries.get(name)?.row.applicationKey;
  }

  /** The zone's account and, when its account cannot call OVH now, why (ListZones, zone export). */
  zoneView(zone: string): { account: string; unavailable: string } {
    const account = this.accountOf(zone);
    if (account === store.DEFAULT_ACCOUNT) return { account, unavailable: this.defaultState.status === 'ok' ? '' : describe(this.defaultState) };
    const e = this.entries.get(account);
    if (!e) return { account, unavailable: `OVH account ${account} was removed` };
    return { account, unavailable: e.state.status === 'ok' ? '' : describe(e.state) };
  }

  /** Lines for /readyz: each account that cannot call OVH, why, and its zones. */
  readyNotes(): string[] {
    const out: string[] = [];
    for (const s of this.states()) {
      if (s.status === 'ok') continue;
      const zones = s.name === store.DEFAULT_ACCOUNT ? [] : this.zonesOf(s.name);
      out.push(`${describe(s)}${zones.length ? `; its zones unavailable: ${zones.join(', ')}` : ''}`);
    }
    return out;
  }

  /** Every account's client closed now (the server stops). */
  close(): void {
    for (const e of this.entries.values()) e.made?.close();
    this.entries.clear();
    for (const t of this.retiring) t();
    this.retiring.clear();
  }

  private stateOf(name: string): AccountState | undefined {
    return name === store.DEFAULT_ACCOUNT ? this.defaultState : this.entries.get(name)?.state;
  }

  private setState(name: string, s: AccountState): void {
    const was = this.stateOf(name);
    if (was?.status === 'disabled' || was?.status === 'unreadable') return;
    if (was && was.status === s.status && was.reason === s.reason) return;
    if (s.status !== 'ok') this.opts.warn(`OVH account ${name}: ${s.status}`, { account: name, reason: s.reason });
    if (name === store.DEFAULT_ACCOUNT) this.defaultState = s;
    else {
      const e = this.entries.get(name);
      if (e) e.state = s;
    }
  }

  private install(row: store.OvhAccountWithSecret): void {
    const before = this.entries.get(row.name);
    const { sealed, ...listed } = row;
    const entry: Entry = { row: listed, state: { name: row.name, status: 'ok' } };
    if (!row.enabled) entry.state = { name: row.name, status: 'disabled', reason: 'disabled by an admin' };
    else if (!this.opts.secrets) entry.state = { name: row.name, status: 'unreadable', reason: 'DNSPLANE_SECRETS_KEYS is not set' };
    else {
      try {
        const credentials = openCredentials(this.opts.secrets, row.name, row.applicationKey, sealed);
        entry.made = this.opts.clientOf({
          name: row.name,
          endpoint: parseOvhEndpoint(row.endpoint, 'endpoint'),
          credentials,
          ...(row.rate ? { rate: row.rate } : {}),
        });
        // A rotation keeps what calls told of the account only when nothing but the rate changed.
        if (before?.made && before.row.applicationKey === row.applicationKey && before.row.rotatedAt?.getTime() === row.rotatedAt?.getTime())
          entry.state = before.state;
      } catch (e) {
        entry.state = { name: row.name, status: 'unreadable', reason: messageOf(e) };
      }
    }
    this.entries.set(row.name, entry);
    if (before?.made) this.retire(before.made);
  }

  private drop(name: string): void {
    const e = this.entries.get(name);
    this.entries.delete(name);
    if (e?.made) this.retire(e.made);
  }

  /** A replaced client closed once the calls it has under way had time to end (they keep its budget until then). */
  private retire(made: AccountClient): void {
    const done = (): void => {
      clearTimeout(timer);
      this.retiring.delete(done);
      made.close();
    };
    const timer = setTimeout(done, RETIRE_MS);
    timer.unref();
    this.retiring.add(done);
  }
}

declare module '../context.js' {
  interface CoreContext {
    /**
     * The OVH accounts beside `default` (issue 44): the registry routing each zone's calls to its
     * account's client, and how `add`/`rotate` prove credentials. Absent: one account only (demo, tests).
     */
    accounts?: AccountsContext;
  }
}
