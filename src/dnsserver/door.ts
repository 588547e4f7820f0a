/**
 * The DNS door's dispatch: one message in, its answers out. In order:
 * 1. a message without a readable header, or a response (QR), is dropped; one that does not parse
 *    gets FORMERR;
 * 2. a signed message is authenticated (RFC 8945 §5.2): its key found (unknown key or algorithm:
 *    BADKEY), its MAC checked (BADSIG), then its time (BADTIME, answered signed with the server's
 *    time); key errors are answered unsigned with NOTAUTH. From here every answer is signed;
 * 3. over UDP, unsigned messages and failed authentications spend their source's rate (limits.ts):
 *    once it is spent they are dropped unanswered (TCP's handshake proves the source; a connection's
 *    cost is bounded by listener.ts);
 * 4. by opcode: QUERY (one question) -> query.ts, or transfer.ts for AXFR/IXFR; UPDATE -> update.ts
 *    (unsigned: REFUSED); anything else NOTIMP.
 * The door turns core's answers into RCODEs; it never reaches store/ or ovh/.
 */
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { noteSeen } from '../core/withdrawals/liveness.js';
import {
  OPCODE,
  RCODE,
  TSIG_ERROR,
  TYPE,
  WireFormatError,
  algorithmOf,
  appendUnsignedTsigError,
  encodeMessage,
  opcodeName,
  parseMessage,
  rcodeName,
  readHeader,
  responseHeader,
  timeOtherData,
  tsigKeyName,
  verifyTsig,
  type Parsed,
} from '../dns/wire/index.js';
import { messageOf } from '../lib/error-message.js';
import { answerTo, replyBytes, type Exchange } from './exchange.js';
import { replacedKeyOf, type TsigKeyring } from '../core/keys/tsig.js';
import type { Notices, SourceLimiter } from './limits.js';
import type { TenantRateLimiter } from '../lib/token-bucket.js';
import type { DnsMetrics } from './metrics.js';
import { answerQuery } from './query.js';
import type { Refusals } from './refusal.js';
import { transfer } from './transfer.js';
import { answerUpdate, type UpdateWait } from './update.js';
import { hostOf } from '../net/address.js';

/** Sending an answer failed: the client is gone. */
class ClientGone extends Error {}

export interface DoorParts {
  ctx: CoreContext;
  log: Logger;
  keyring: TsigKeyring;
  limiter: SourceLimiter;
  notices: Notices;
  refusals: Refusals;
  metrics?: DnsMetrics;
  /** Seconds since the epoch (tests may move it). */
  now?: () => number;
  /** How long an UPDATE's NOERROR may wait for its change to be visible (update.ts); absent: not at all. */
  updateWait?: UpdateWait;
  /** UPDATEs per tenant (DNSPLANE_DNS_UPDATE_RATE, _BURST); absent: unlimited. */
  updateRate?: TenantRateLimiter;
}

/** Where a message came from, and how its answers go back. */
export interface Arrival {
  transport: 'udp' | 'tcp';
  source: string;
  /** Sends one answer (a transfer sends several, in order); resolves once it may send the next. */
  send(bytes: Buffer): Promise<void> | void;
}

export function dnsDoor(parts: DoorParts): (bytes: Buffer, arrival: Arrival) => Promise<void> {
  const { ctx, log, keyring, limiter, notices, refusals, metrics } = parts;
  const now = parts.now ?? (() => Math.floor(Date.now() / 1000));

  return async (bytes, arrival) => {
    const started = performance.now();
    const header = readHeader(bytes);
    if (!header) return void metrics?.drop('malformed');
    if (header.qr) return void metrics?.drop('response');
    let lastRcode = 'NOERROR';
    /** Set once the request is parsed: a SERVFAIL after it is answered as the request asks (signed). */
    let exchange: Exchange | undefined;
    const send = async (out: Buffer) => {
      lastRcode = rcodeName(out[3]! & 0xf);
      try {
        await arrival.send(out);
      } catch (e) {
        throw new ClientGone(messageOf(e));
      }
    };
    // Over UDP a source address can be forged: what is sent without a valid key spends the source's
    // rate (limits.ts). TCP proves its source with the handshake; its cost is bounded per connection.
    const allowed = () => arrival.transport === 'tcp' || limiter.take(arrival.source);
    const anonymous = (reason: string): boolean => {
      if (allowed()) {
        notices.note(reason, arrival.source);
        return true;
      }
      metrics?.drop('rate_limited');
      notices.note('rate limited', arrival.source);
      return false;
    };
    try {
      let parsed: Parsed;
      try {
        parsed = parseMessage(bytes);
      } catch (e) {
        if (!(e instanceof WireFormatError)) throw e;
        if (!anonymous('malformed')) return;
        return await send(encodeMessage({ header: responseHeader(header, RCODE.FORMERR), questions: [], answers: [], authorities: [], additionals: [] }));
      }
      const ex: Exchange = { bytes, request: parsed, transport: arrival.transport, source: arrival.source };
      exchange = ex;
      if (parsed.tsig) {
        const ok = await authenticate(ex);
        if (!ok) return;
      } else if (!allowed()) {
        metrics?.drop('rate_limited');
        notices.note('rate limited', arrival.source);
        return;
      }
      const m = parsed.message;
      if (m.header.opcode === OPCODE.QUERY) {
        if (m.questions.length !== 1) return await send(replyBytes(ex, answerTo(ex, RCODE.FORMERR)));
        const qtype = m.questions[0]!.type;
        if (qtype === TYPE.AXFR || qtype === TYPE.IXFR) {
          for await (const out of transfer(ctx, ex, refusals)) await send(out);
          return;
        }
        return await send(replyBytes(ex, await answerQuery(ctx, ex)));
      }
      if (m.header.opcode === OPCODE.UPDATE)
        return await send(replyBytes(ex, await answerUpdate(ctx, ex, refusals, parts.updateWait, started, parts.updateRate)));
      return await send(replyBytes(ex, answerTo(ex, RCODE.NOTIMP)));
    } catch (e) {
      // The client went away (a closed TCP connection, a transfer it stopped reading): nothing to answer.
      if (e instanceof ClientGone) return;
      notices.error({ err: messageOf(e), opcode: opcodeName(header.opcode), source: arrival.source }, 'dns: answering a message failed', arrival.source);
      const failed = exchange
        ? replyBytes(exchange, answerTo(exchange, RCODE.SERVFAIL))
        : encodeMessage({ header: responseHeader(header, RCODE.SERVFAIL), questions: [], answers: [], authorities: [], additionals: [] });
      await send(failed).catch(() => undefined);
    } finally {
      metrics?.answered(opcodeName(header.opcode), arrival.transport, lastRcode, (performance.now() - started) / 1000);
    }

    /** RFC 8945 §5.2; true when the request is authenticated (ex.key set), else it was answered. */
    async function authenticate(ex: Exchange): Promise<boolean> {
      const tsig = ex.request.tsig!;
      const t = tsig.record.data;
      const name = tsigKeyName(tsig.record);
      const key = await keyring.find(name);
      const failed = async (error: number, why: string): Promise<false> => {
        metrics?.tsigError(rcodeName(error));
        if (!anonymous(`TSIG ${rcodeName(error)} (key ${JSON.stringify(name.slice(0, 64))}: ${why})`)) return false;
        const answer = encodeMessage(answerTo(ex, RCODE.NOTAUTH));
        await send(appendUnsignedTsigError(answer, { ...t, keyName: tsig.record.name }, error));
        return false;
      };
      if (!key) return failed(TSIG_ERROR.BADKEY, 'no such key');
      if (algorithmOf(t.algorithm) !== key.algorithm) return failed(TSIG_ERROR.BADKEY, `the key is ${key.algorithm}, the message says ${t.algorithm}`);
      const current = verifyTsig(ex.bytes, tsig, key, now());
      // A rotation with a grace: the replaced secret still signs, and the answer is signed with it.
      const replaced = !current.ok && !current.formerr && current.error === TSIG_ERROR.BADSIG ? replacedKeyOf(ctx, key) : undefined;
      const retried = replaced ? verifyTsig(ex.bytes, tsig, replaced, now()) : undefined;
      const [verdict, signer] = retried && (retried.ok || retried.error !== TSIG_ERROR.BADSIG) ? [retried, replaced!] : [current, key];
      if (verdict.ok) {
        ex.key = signer;
        ex.requestMac = verdict.mac;
        keyring.noteUsed(key);
        noteSeen(ctx, key.tenant, hostOf(ex.source));
        return true;
      }
      if (verdict.formerr) {
        metrics?.tsigError('FORMERR');
        if (anonymous(`TSIG MAC malformed (key ${name})`)) await send(encodeMessage(answerTo(ex, RCODE.FORMERR)));
        return false;
      }
      if (verdict.error !== TSIG_ERROR.BADTIME) return failed(verdict.error, verdict.why);
      // BADTIME: the MAC was right, so the answer is signed (over the request's MAC), with the
      // request's time signed and the server's time in other data (§5.2.3).
      metrics?.tsigError('BADTIME');
      log.info({ key: key.name, tenant: key.tenant.name, source: ex.source, why: verdict.why }, 'dns: TSIG BADTIME (clocks apart)');
      const signed = { ...ex, key: signer, requestMac: t.mac };
      await send(replyBytes(signed, answerTo(ex, RCODE.NOTAUTH), { error: TSIG_ERROR.BADTIME, otherData: timeOtherData(now()), timeSigned: t.timeSigned }));
      return false;
    }
  };
}
