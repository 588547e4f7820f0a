/**
 * A tenant's handover (docs/ownership.md "Handover"): everything tenant OLD owns — its exclusive sets
 * and its targets of shared sets, within a zone or a suffix when named — becomes tenant NEW's, in one
 * transaction under the zones' locks, with one journal row (`tenant-handover`) that lists what moved,
 * so that `journal revert` moves it back (revertHandover). Nothing on OVH changes, so nothing is sent:
 * the records stay as they are, only their owner label changes (every zone touched gets generation + 1,
 * its sets named in the NOTIFY, as AssignOwnership does). Refused as a whole, naming the sets, when
 * NEW's grants (zones, suffixes) do not cover every one of them: a handover is never half done.
 */
import { InvalidInputError } from '../../dns/errors.js';
import { normalizeName } from '../../dns/names.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError, PermissionDeniedError } from '../errors.js';
import { auditAdminActionWithId } from '../journal/audit.js';
import { managedZone, requireAdmin, tenantNamed } from '../tenants/gate.js';
import { mayUseZone, withinSuffixes, type Tenant } from '../tenants/tenants.js';

export interface HandoverInput {
  old: string;
  new: string;
  /** '' : every zone. */
  zone: string;
  /** '' : every name; else that name and every name below it. */
  suffix: string;
  dryRun: boolean;
}

export interface HandedSet extends store.OwnedKey {
  shared: boolean;
}

export interface HandoverResult {
  old: string;
  new: string;
  dryRun: boolean;
  /** What moved (a dry run: what would move); sorted by zone, name, type, target. */
  sets: HandedSet[];
  /** The journal row that records it ('' for a dry run or when nothing moved). */
  journalId: string;
  /** What a revert left as it was: no longer the tenant's it was handed to. */
  leftAlone: store.OwnedKey[];
}

/** The most sets one refusal names (the count says how many more). */
const NAMED_IN_REFUSAL = 20;

export const HANDOVER_KIND = 'tenant-handover';
export const HANDOVER_REVERT_KIND = 'tenant-handover-revert';

/** Hands OLD's ownership to NEW (see the header); the caller must be an admin. */
export async function handover(ctx: CoreContext, actor: Tenant, input: HandoverInput): Promise<HandoverResult> {
  requireAdmin(actor);
  const from = await tenantNamed(ctx, input.old, 'old');
  const to = await tenantNamed(ctx, input.new, 'new');
  if (from.id === to.id) throw new InvalidInputError('new', `must be another tenant than old ("${from.name}")`);
  const zone = input.zone === '' ? undefined : await managedZone(ctx, input.zone, 'zone');
  if (zone !== undefined && !mayUseZone(to, zone))
    throw new PermissionDeniedError('zone', `tenant "${to.name}" may not write zone "${zone}" (its zones: ${to.zones.join(', ') || 'none'})`);
  const suffix = input.suffix === '' ? undefined : normalizeName(input.suffix, 'suffix');
  if (zone !== undefined && suffix !== undefined && !withinSuffixes(suffix, [zone]))
    throw new InvalidInputError('suffix', `"${suffix}" is not in zone "${zone}"`);

  const select = (rows: store.OwnershipRow[]) =>
    rows.filter((r) => (zone === undefined || r.zone === zone) && (suffix === undefined || withinSuffixes(r.dnsName, [suffix])));
  const judge = (rows: store.OwnershipRow[]): HandedSet[] => {
    const refused = [
      ...new Set(rows.filter((r) => !mayUseZone(to, r.zone) || !withinSuffixes(r.dnsName, to.suffixes)).map((r) => `${r.dnsName} ${r.recordType}`)),
    ];
    if (refused.length > 0) {
      const more = refused.length > NAMED_IN_REFUSAL ? ` and ${refused.length - NAMED_IN_REFUSAL} more` : '';
      const grants = `zones: ${to.zones.join(', ') || 'all'}${to.suffixes.length > 0 ? `; suffixes: ${to.suffixes.join(', ')}` : ''}`;
      throw new PermissionDeniedError(
        'new',
        `tenant "${to.name}" may not write ${refused.length} record set(s) tenant "${from.name}" owns (its ${grants}): ${refused.slice(0, NAMED_IN_REFUSAL).join(', ')}${more}; nothing was handed over (narrow with zone or suffix, or widen its grants)`,
      );
    }
    return rows.map((r) => ({ zone: r.zone, dnsName: r.dnsName, recordType: r.recordType, target: r.target, shared: r.shared }));
  };

  const planned = judge(select(await store.listOwnershipForTenant(ctx.pool, from.id, zone)));
  const result = { old: from.name, new: to.name, dryRun: input.dryRun, journalId: '', leftAlone: [] };
  if (input.dryRun || planned.length === 0) return { ...result, sets: planned };
  const zones = [...new Set(planned.map((s) => s.zone))];
  return store.withZoneLocks(ctx.pool, zones, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    // Judged again under the locks: what OLD owns now in those zones is what moves.
    const sets = judge(select((await store.listOwnershipForTenant(tx, from.id, zone)).filter((r) => zones.includes(r.zone))));
    await store.moveOwnership(tx, from.id, to.id, sets);
    await announce(tx, sets);
    const summary = `${sets.length} ownership row(s) of tenant "${from.name}" handed over to tenant "${to.name}"${zone ? ` in zone ${zone}` : ''}${suffix ? ` under ${suffix}` : ''}`;
    const journalId = await auditAdminActionWithId(tx, zones.length === 1 ? zones[0]! : null, actor, HANDOVER_KIND, summary, {
      old: from.name,
      oldId: from.id,
      new: to.name,
      newId: to.id,
      sets,
    });
    ctx.log.info({ old: from.name, new: to.name, sets: sets.length, zones, by: actor.name, journalId }, 'tenant handover');
    return { ...result, sets, journalId };
  });
}

/** generation + 1 of each zone the sets are in, their sets named (every replica re-reads those, not the zone). */
async function announce(tx: store.Queryable, sets: readonly store.OwnedKey[]): Promise<void> {
  for (const zone of [...new Set(sets.map((s) => s.zone))]) {
    const named = new Map<string, { dnsName: string; recordType: string }>();
    for (const s of sets) if (s.zone === zone) named.set(`${s.dnsName} ${s.recordType}`, { dnsName: s.dnsName, recordType: s.recordType });
    const generation = await store.bumpGeneration(tx, zone);
    await store.notifyZoneChanged(tx, zone, generation, { ids: [], sets: [...named.values()] });
  }
}

interface HandoverDetail {
  old: string;
  oldId: string;
  new: string;
  newId: string;
  sets: HandedSet[];
}

function detailOf(intent: store.JsonValue): { kind: string; detail: HandoverDetail } | undefined {
  const i = intent as { kind?: unknown; detail?: Partial<HandoverDetail> } | null;
  if (i?.kind !== HANDOVER_KIND && i?.kind !== HANDOVER_REVERT_KIND) return undefined;
  const d = i.detail;
  if (!d || typeof d.oldId !== 'string' || typeof d.newId !== 'string' || !Array.isArray(d.sets)) return undefined;
  return { kind: i.kind, detail: d as HandoverDetail };
}

/** Whether journal row `id` is a handover (or a handover's revert), which `journal revert` undoes with revertHandover. */
export async function isHandover(ctx: CoreContext, id: string): Promise<boolean> {
  if (!/^[1-9][0-9]{0,18}$/.test(id)) return false;
  const row = await store.getJournalEntry(ctx.pool, id);
  return row !== undefined && detailOf(row.intent) !== undefined;
}

/**
 * Undoes the handover of journal row `journalId`: what it handed over and the new tenant still owns
 * goes back to the old one (one transaction, one journal row `tenant-handover-revert`, itself
 * revertible); what the new tenant no longer owns (deleted, given away since) is left as it is and
 * listed. No OVH call.
 */
export async function revertHandover(ctx: CoreContext, actor: Tenant, journalId: string, dryRun: boolean): Promise<HandoverResult> {
  requireAdmin(actor);
  if (!/^[1-9][0-9]{0,18}$/.test(journalId)) throw new InvalidInputError('journalId', `must be a journal entry id (digits), got "${journalId}"`);
  const row = await store.getJournalEntry(ctx.pool, journalId);
  if (!row) throw new NotFoundError('journal entry', journalId, `journal entry ${journalId} does not exist`);
  const found = detailOf(row.intent);
  if (!found) throw new InvalidInputError('journalId', `journal entry ${journalId} is not a tenant handover`);
  const d = found.detail;
  const back = await store.getTenantById(ctx.pool, d.oldId);
  const from = await store.getTenantById(ctx.pool, d.newId);
  if (!back || !from) throw new NotFoundError('tenant', d.oldId, `journal entry ${journalId}: a tenant of that handover no longer exists`);
  const key = (k: store.OwnedKey) => `${k.zone} ${k.dnsName} ${k.recordType} ${k.target}`;
  const split = (owned: store.OwnershipRow[]) => {
    const still = new Set(owned.map(key));
    return { sets: d.sets.filter((s) => still.has(key(s))), leftAlone: d.sets.filter((s) => !still.has(key(s))).map(({ shared: _, ...k }) => k) };
  };
  const zones = [...new Set(d.sets.map((s) => s.zone))];
  const result = { old: from.name, new: back.name, dryRun, journalId: '' };
  if (dryRun || zones.length === 0) return { ...result, ...split(await store.listOwnershipForTenant(ctx.pool, from.id)) };
  return store.withZoneLocks(ctx.pool, zones, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    const { sets, leftAlone } = split(await store.listOwnershipForTenant(tx, from.id));
    await store.moveOwnership(tx, from.id, back.id, sets);
    await announce(tx, sets);
    const summary = `handover ${journalId} reverted: ${sets.length} ownership row(s) of tenant "${from.name}" back to tenant "${back.name}", ${leftAlone.length} left as they are`;
    const id = await auditAdminActionWithId(tx, zones.length === 1 ? zones[0]! : null, actor, HANDOVER_REVERT_KIND, summary, {
      reverts: journalId,
      old: from.name,
      oldId: from.id,
      new: back.name,
      newId: back.id,
      sets,
      leftAlone,
    });
    ctx.log.info(
      { reverts: journalId, old: from.name, new: back.name, sets: sets.length, leftAlone: leftAlone.length, by: actor.name },
      'tenant handover reverted',
    );
    return { ...result, sets, leftAlone, journalId: id };
  });
}
