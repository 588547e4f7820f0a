/**
 * A zone of many records for the simulator, as a platform's clusters fill one (issue 28): A, AAAA,
 * TXT (external-dns's registry) and CNAME in turn, one record set each. The DNS door's transfer
 * tests and bench/loop-delay.ts use it.
 */
import type { SimRecordInit } from '../../src/ovhsim/index.js';

export function mixedRecords(n: number, zone: string): SimRecordInit[] {
  return Array.from({ length: n }, (_, i): SimRecordInit => {
    switch (i % 4) {
      case 0:
        return { subDomain: `a${i}`, fieldType: 'A', target: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, ttl: 300 };
      case 1:
        return { subDomain: `aaaa${i}`, fieldType: 'AAAA', target: `2001:db8::${i.toString(16)}`, ttl: 300 };
      case 2:
        return { subDomain: `txt${i}`, fieldType: 'TXT', target: `"heritage=external-dns,external-dns/owner=cluster-${i % 200}"`, ttl: 300 };
      default:
        return { subDomain: `cname${i}`, fieldType: 'CNAME', target: `a${i - 3}.${zone}.`, ttl: 300 };
    }
  });
}

const HEX = (i: number, bytes: number) =>
  (
    i
      .toString(16)
      .padStart(8, '0')
      .repeat(Math.ceil(bytes / 4)) as string
  ).slice(0, bytes * 2);

/**
 * A zone of many records of every type OVH has (issue 43), one record per name, the 17 in turn, each
 * under the name its type wants (`_dmarc.`, `._domainkey.`, `_443._tcp.`): the DNS door's transfer of
 * every wire form at scale (bench/scale.ts).
 */
export function everyTypeRecords(n: number, zone: string): SimRecordInit[] {
  return Array.from({ length: n }, (_, i): SimRecordInit => {
    const h = `h${i}`;
    const ttl = 300;
    switch (i % 17) {
      case 0:
        return { subDomain: h, fieldType: 'A', target: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, ttl };
      case 1:
        return { subDomain: h, fieldType: 'AAAA', target: `2001:db8::${i.toString(16)}`, ttl };
      case 2:
        return { subDomain: h, fieldType: 'TXT', target: `"heritage=external-dns,external-dns/owner=cluster-${i % 200}"`, ttl };
      case 3:
        return { subDomain: h, fieldType: 'CNAME', target: `h${i - 3}.${zone}.`, ttl };
      case 4:
        return { subDomain: h, fieldType: 'MX', target: `10 mx${i}.example.net.`, ttl };
      case 5:
        return { subDomain: `_s._tcp.${h}`, fieldType: 'SRV', target: `0 5 ${i % 65536} srv${i}.example.net.`, ttl };
      case 6:
        return { subDomain: h, fieldType: 'CAA', target: '0 issue "letsencrypt.org"', ttl };
      case 7:
        return { subDomain: h, fieldType: 'NS', target: `ns${i}.example.net.`, ttl };
      case 8:
        return { subDomain: h, fieldType: 'PTR', target: `host${i}.example.net.`, ttl };
      case 9:
        return { subDomain: h, fieldType: 'NAPTR', target: `100 10 "S" "SIP+D2U" "" _sip._udp.h${i}.example.net.`, ttl };
      case 10:
        return { subDomain: `_443._tcp.${h}`, fieldType: 'TLSA', target: `3 1 1 ${HEX(i, 32)}`, ttl };
      case 11:
        return { subDomain: h, fieldType: 'SSHFP', target: `4 2 ${HEX(i, 32)}`, ttl };
      case 12:
        return { subDomain: h, fieldType: 'LOC', target: `52 22 ${i % 60}.000 N 4 53 32.000 E -2.00m 1m 10000m 10m`, ttl };
      case 13:
        return { subDomain: h, fieldType: 'DNAME', target: `d${i}.example.net.`, ttl };
      case 14:
        return { subDomain: h, fieldType: 'SPF', target: `v=spf1 ip4:10.0.${(i >> 8) & 255}.${i & 255} -all`, ttl };
      case 15:
        return { subDomain: `s${i}._domainkey`, fieldType: 'DKIM', target: `v=DKIM1;k=rsa;p=MIGf${i}`, ttl };
      default:
        return { subDomain: `_dmarc.${h}`, fieldType: 'DMARC', target: `v=DMARC1;p=none;rua=mailto:r${i}@example.net`, ttl };
    }
  });
}
