/**
 * The one way the DNS door refuses an UPDATE or a transfer (BIND's habit in lib/ns/update.c: every
 * refusal through one macro): it logs the zone, the name and type concerned, the tenant (and key),
 * the reason in words and the RCODE, counts it in dnsplane_dns_refusals_total, and — for a tenant's
 * refusal (REFUSED) in a managed zone — writes it to the journal, the audit log, so that "why was
 * this update refused?" always has an answer. Refusals with no key to name (unsigned writes) go to
 * the bounded summary instead of a line each.
 */
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { journalDnsRefusal } from '../core/dns-door/dns-update.js';
import { RCODE, rcodeName } from '../dns/wire/index.js';
import { messageOf } from '../lib/error-message.js';
import type { Exchange } from './exchange.js';
import type { Notices } from './limits.js';
import type { DnsMetrics } from './metrics.js';

export interface Refusal {
  /** The zone of the request ('' when none could be read). */
  zone: string;
  /** Whether dnsplane manages that zone (only then is it a metric label and a journal row). */
  managed: boolean;
  name?: string;
  type?: string;
  reason: string;
  rcode: number;
  /** A refusal that may come in floods (a tenant over its UPDATE rate): counted and summarized, never a line or a journal row each. */
  quiet?: boolean;
}

/**
 * Why a zone is refused NOTAUTH, naming the zone asked and the zones managed: miekg/dns (cert-manager,
 * external-dns) reads any signed NOTAUTH as "dns: bad authentication", the same words as a wrong
 * secret, so this line is what tells an operator the two apart (docs/certificates.md).
 */
export function notManaged(zone: string, managed: readonly string[]): string {
  const sorted = [...managed].sort();
  const listed = sorted.length === 0 ? 'none' : sorted.length > 10 ? `${sorted.slice(0, 10).join(', ')}, … (${sorted.length} in all)` : sorted.join(', ');
  const parent = sorted.filter((m) => zone.endsWith(`.${m}`)).sort((a, b) => b.length - a.length)[0];
  const hint = parent
    ? `; it is a name inside managed zone ${parent}: ask for ${parent} (a client that found "${zone}" as its zone saw it delegated elsewhere)`
    : '; a zone missing from DNSPLANE_ZONES is not managed';
  return `"${zone}" is not a zone dnsplane manages (managed: ${listed})${hint}`;
}

export class Refusals {
  constructor(
    private readonly ctx: CoreContext,
    private readonly log: Logger,
    private readonly notices: Notices,
    private readonly metrics?: DnsMetrics,
  ) {}

  /** Records the refusal; returns its RCODE for the answer. */
  async refuse(ex: Exchange, r: Refusal): Promise<number> {
    const code = rcodeName(r.rcode);
    const tenant = ex.key?.tenant.name ?? '';
    this.metrics?.refused(r.managed ? r.zone : '', tenant, code);
    if (!ex.key || r.quiet) {
      this.notices.note(`refused ${code}: ${r.reason}`, ex.source);
      return r.rcode;
    }
    const fields = { zone: r.zone, name: r.name, type: r.type, tenant, key: ex.key.name, reason: r.reason, rcode: code, source: ex.source };
    this.log.info(fields, 'dns: refused');
    if (r.managed && r.rcode === RCODE.REFUSED) {
      await journalDnsRefusal(
        this.ctx,
        r.zone,
        ex.key.tenant,
        `DNS ${r.type === 'AXFR' || r.type === 'IXFR' ? r.type : 'UPDATE'} refused (${code}): ${r.reason}`,
        fields,
      ).catch((e: unknown) => this.log.warn({ zone: r.zone, err: messageOf(e) }, 'dns: the refusal could not be journaled'));
    }
    return r.rcode;
  }
}
