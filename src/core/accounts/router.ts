/**
 * The OVH client core is handed (CoreContext.ovh) when accounts are in play: the `default` account's
 * client (the OVH_* variables: OvhApi itself, unchanged for its zones), with every call for a zone of
 * another account sent through that account's client instead (core/accounts/registry.ts): its
 * endpoint, its credentials, its budget and its limiter, in the same scope (flow and write guard) as
 * the call was made in. Each call's outcome tells the registry whether its account answers.
 */
import { OvhApi, type OvhApiOptions, type OvhSoa, type OvhZoneInfo } from '../../ovh/client.js';
import type { RecordFilter } from '../../ovh/client/answers.js';
import type { RecordListing } from '../../ovh/client/expanded-lists.js';
import type { OvhRecord, OvhRecordBody } from '../../ovh/types.js';
import type { OvhAccounts } from './registry.js';

export class RoutedOvhApi extends OvhApi {
  constructor(
    opts: OvhApiOptions,
    readonly accounts: OvhAccounts,
  ) {
    super(opts);
  }

  /** `call` on the client of `zone`'s account (this one's own for `default`), its outcome noted. */
  private async via<T>(zone: string, call: (c: OvhApi) => Promise<T>, own: () => Promise<T>): Promise<T> {
    const { name, client } = this.accounts.clientFor(zone);
    try {
      const r = await (client ? call(client.scoped(this.scope)) : own());
      this.accounts.succeeded(name);
      return r;
    } catch (e) {
      this.accounts.failed(name, e);
      throw e;
    }
  }

  override getZoneInfo(zone: string): Promise<OvhZoneInfo> {
    return this.via(
      zone,
      (c) => c.getZoneInfo(zone),
      () => super.getZoneInfo(zone),
    );
  }

  override getSoa(zone: string): Promise<OvhSoa> {
    return this.via(
      zone,
      (c) => c.getSoa(zone),
      () => super.getSoa(zone),
    );
  }

  override getExport(zone: string): Promise<string> {
    return this.via(
      zone,
      (c) => c.getExport(zone),
      () => super.getExport(zone),
    );
  }

  override listRecordIds(zone: string, filter: RecordFilter = {}): Promise<string[]> {
    return this.via(
      zone,
      (c) => c.listRecordIds(zone, filter),
      () => super.listRecordIds(zone, filter),
    );
  }

  override listRecordsOrIds(zone: string, filter: RecordFilter = {}): Promise<RecordListing> {
    return this.via(
      zone,
      (c) => c.listRecordsOrIds(zone, filter),
      () => super.listRecordsOrIds(zone, filter),
    );
  }

  override getRecord(zone: string, id: string, retryNotFound = 0): Promise<OvhRecord> {
    return this.via(
      zone,
      (c) => c.getRecord(zone, id, retryNotFound),
      () => super.getRecord(zone, id, retryNotFound),
    );
  }

  override createRecord(zone: string, body: OvhRecordBody, knownIds: ReadonlySet<string>): Promise<OvhRecord> {
    return this.via(
      zone,
      (c) => c.createRecord(zone, body, knownIds),
      () => super.createRecord(zone, body, knownIds),
    );
  }

  override updateRecord(zone: string, id: string, body: { subDomain?: string; target?: string; ttl?: number }): Promise<void> {
    return this.via(
      zone,
      (c) => c.updateRecord(zone, id, body),
      () => super.updateRecord(zone, id, body),
    );
  }

  override deleteRecord(zone: string, id: string): Promise<void> {
    return this.via(
      zone,
      (c) => c.deleteRecord(zone, id),
      () => super.deleteRecord(zone, id),
    );
  }

  override refresh(zone: string): Promise<void> {
    return this.via(
      zone,
      (c) => c.refresh(zone),
      () => super.refresh(zone),
    );
  }
}
