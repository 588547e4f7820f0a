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
