/**
 * The simulator's TLS certificate: self-signed (so its PEM is also the CA a client must trust), EC P-256,
 * valid for localhost, 127.0.0.1, ::1 and the listen host when it is a specific name or address.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { generate } from 'selfsigned';

export interface TlsMaterial {
  key: string;
  cert: string;
}

export async function generateCertificate(listenHost?: string): Promise<TlsMaterial> {
  const altNames: { type: 2 | 7; value?: string; ip?: string }[] = [
    { type: 2, value: 'localhost' },
    { type: 7, ip: '127.0.0.1' },
    { type: 7, ip: '::1' },
  ];
  const wildcard = new Set(['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost']);
  if (listenHost && !wildcard.has(listenHost)) {
    altNames.push(net.isIP(listenHost) ? { type: 7, ip: listenHost } : { type: 2, value: listenHost });
  }
  const now = Date.now();
  // A distinct subject per certificate: a client trusting several simulators' certificates (one CA list)
  // looks issuers up by name, and identical names would make it check against the wrong one.
  const subject = [
    { name: 'commonName', value: 'localhost' },
    { name: 'organizationName', value: `dnsplane ovhsim ${randomBytes(6).toString('hex')}` },
  ];
  const pems = await generate(subject, {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now - 24 * 3600 * 1000),
    notAfterDate: new Date(now + 365 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}
