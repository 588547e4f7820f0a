/**
 * What an authoritative answer says of a probed set of OVH's SPF, DKIM or DMARC type (issue 43): TXT
 * on the wire, one TXT set with the name's other TXT records — a created or updated set is seen when
 * the TXT answer holds its targets, a deleted one when the answer holds no value of its type.
 */
import { describe, expect, it } from 'vitest';
import { judge } from '../../../src/core/probe/judge.js';
import { CLASS, RCODE, TYPE, txtStrings, type ResourceRecord } from '../../../src/dns/wire/index.js';
import type { DnsAnswer } from '../../../src/dnsclient/index.js';

const ZONE = 'example.com';
const NAME = `sel._domainkey.${ZONE}`;
const txt = (text: string): ResourceRecord => ({ name: NAME, type: TYPE.TXT, class: CLASS.IN, ttl: 300, data: { kind: 'TXT', strings: txtStrings(text) } });
const answer = (...values: string[]): DnsAnswer => ({ rcode: RCODE.NOERROR, aa: true, transport: 'udp', answers: values.map(txt), authorities: [] });
const DKIM = 'v=DKIM1;k=rsa;p=abc';

describe('judge: the TXT family', () => {
  it('a DKIM set is seen in the TXT answer beside the name’s other TXT values; one missing is old', () => {
    expect(judge(ZONE, { name: NAME, type: 'DKIM', targets: [DKIM] }, answer(DKIM, 'other text'))).toBe('match');
    expect(judge(ZONE, { name: NAME, type: 'DKIM', targets: [DKIM] }, answer('other text'))).toBe('old');
  });

  it('a deleted DKIM set is gone when no value of the answer is a DKIM record’s', () => {
    expect(judge(ZONE, { name: NAME, type: 'DKIM', targets: null }, answer('other text'))).toBe('match');
    expect(judge(ZONE, { name: NAME, type: 'DKIM', targets: null }, answer(DKIM, 'other text'))).toBe('old');
  });

  it('a TXT set is still judged exactly', () => {
    expect(judge(ZONE, { name: NAME, type: 'TXT', targets: ['other text'] }, answer(DKIM, 'other text'))).toBe('old');
  });
});
