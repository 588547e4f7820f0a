/**
 * UPDATE (opcode 5, RFC 2136): only signed updates are taken; the rest of the protocol follows.
 */
import type { CoreContext } from '../core/context.js';
import { RCODE, foldCase, type Message } from '../dns/wire/index.js';
import { answerTo, type Exchange } from './exchange.js';
import type { Refusals } from './refusal.js';

export async function answerUpdate(_ctx: CoreContext, ex: Exchange, refusals: Refusals): Promise<Message> {
  const zone = foldCase(ex.request.message.questions[0]?.name ?? '');
  if (!ex.key) return answerTo(ex, await refusals.refuse(ex, { zone, managed: false, reason: 'unsigned UPDATE (sign it with a TSIG key)', rcode: RCODE.REFUSED }));
  return answerTo(ex, RCODE.NOTIMP);
}
