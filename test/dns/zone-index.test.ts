import { describe, expect, it } from 'vitest';
import type { Endpoint } from '../../src/dns/types.js';
import { indexZone, resolve } from '../../src/dns/zone-index.js';

const Z = 'example.test';
const e = (dnsName: string, recordType: Endpoint['recordType'], targets: string[]): Endpoint => ({ dnsName, recordType, targets, ttl: 300 });
const index = indexZone(Z, [
  e(Z, 'NS', ['ns1.sim.test']),
  e(`a.b.${Z}`, 'A', ['192.0.2.1']),
  e(`loop1.${Z}`, 'CNAME', [`loop2.${Z}`]),
  e(`loop2.${Z}`, 'CNAME', [`loop1.${Z}`]),
  e(`out.${Z}`, 'CNAME', ['elsewhere.example']),
  e(`sub.${Z}`, 'NS', ['ns.elsewhere.example']),
  e(`*.${Z}`, 'TXT', ['wild']),
]);

describe('resolve', () => {
  it('tells an empty non-terminal (NODATA) from a name that does not exist (NXDOMAIN or a wildcard)', () => {
    expect(resolve(index, `b.${Z}`, 'A')).toMatchObject({ rcode: 'NOERROR', negative: true, answers: [] });
    expect(resolve(index, `c.b.${Z}`, 'A')).toMatchObject({ rcode: 'NXDOMAIN', negative: true });
    expect(resolve(index, `nope.${Z}`, 'TXT').answers).toEqual([{ owner: `nope.${Z}`, set: e(`*.${Z}`, 'TXT', ['wild']) }]);
    expect(resolve(index, `nope.${Z}`, 'A')).toMatchObject({ rcode: 'NOERROR', negative: true });
  });

  it('answers SOA at the apex, follows CNAMEs inside the zone without looping, refers below a delegation', () => {
    expect(resolve(index, Z, 'SOA')).toMatchObject({ soa: true, negative: false });
    expect(resolve(index, `loop1.${Z}`, 'A').answers.map((a) => a.owner)).toEqual([`loop1.${Z}`, `loop2.${Z}`]);
    expect(resolve(index, `out.${Z}`, 'A').answers).toHaveLength(1);
    expect(resolve(index, `x.sub.${Z}`, 'A')).toMatchObject({ aa: false, referral: { owner: `sub.${Z}` } });
  });
});
