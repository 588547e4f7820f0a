/**
 * The configuration `dnsplane tenant tsig create` prints (src/ui/public/client-configs.js through cli/key-configs.ts), read by the real tools
 * installed here (Debian's packages):
 * - nsupdate reads the key file and signs an UPDATE with it: the TSIG record it sends names our key
 *   and algorithm, and its MAC is the HMAC of the message under our secret (RFC 8945 §4.3.3),
 *   for each of the six algorithms;
 * - certbot-dns-rfc2136's own code reads the ini file into the server, port, key name, secret and
 *   algorithm we meant (certbot falls back to HMAC-MD5 for an algorithm it does not find as written);
 * - lego lists exactly the RFC2136_* variables we set (`lego dnshelp -c rfc2136`);
 * - kubectl builds the Secret cert-manager reads from the printed `kubectl create secret` line.
 * A tool that is not installed is skipped, saying so.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { nsupdateKeyFile, tsigConfigs, type KeyForConfig } from '../../src/cli/key-configs.js';
import { TSIG_ALGORITHMS, tsigSecretBytes } from '../../src/dns/tsig-keys.js';
import type { TsigAlgorithm } from '../../src/dns/wire/index.js';

const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const PYTHON = ['/usr/bin/python3', 'python3'].find((p) => spawnSync(p, ['-c', 'import certbot_dns_rfc2136'], { stdio: 'ignore' }).status === 0);
const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-tsig-tools-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function keyFor(algorithm: TsigAlgorithm, name = `alice-${randomBytes(4).toString('hex')}.dnsplane`): KeyForConfig {
  return { name, algorithm, secret: randomBytes(tsigSecretBytes(algorithm)).toString('base64'), tenant: 'alice', zones: ['example.test'], acmeOnly: false };
}

const SERVER = { host: '127.0.0.1', port: 5353, source: '--server' };

/** The wire form of a DNS name (uncompressed, lowercase). */
function wireName(name: string): Buffer {
  const labels = name
    .replace(/\.$/, '')
    .split('.')
    .filter((l) => l !== '');
  return Buffer.concat([...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l.toLowerCase(), 'ascii')])), Buffer.from([0])]);
}

/** Skips a name at `at` (labels or a compression pointer); returns the offset after it. */
function skipName(msg: Buffer, at: number): number {
  for (;;) {
    const len = msg[at]!;
    if (len === 0) return at + 1;
    if ((len & 0xc0) === 0xc0) return at + 2;
    at += 1 + len;
  }
}

/** Reads an uncompressed name at `at`. */
function readName(msg: Buffer, at: number): { name: string; end: number } {
  const labels: string[] = [];
  for (;;) {
    const len = msg[at]!;
    if (len === 0) return { name: labels.join('.'), end: at + 1 };
    labels.push(msg.subarray(at + 1, at + 1 + len).toString('ascii'));
    at += 1 + len;
  }
}

/** The TSIG record of a signed message, and the MAC it must carry under `secret` (RFC 8945 §4.3.3). */
function checkTsig(msg: Buffer, secret: Buffer, hash: string): { keyName: string; algorithm: string; mac: Buffer; expected: Buffer } {
  const counts = [msg.readUInt16BE(4), msg.readUInt16BE(6), msg.readUInt16BE(8), msg.readUInt16BE(10)];
  let at = 12;
  for (let i = 0; i < counts[0]!; i++) at = skipName(msg, at) + 4;
  const records = counts[1]! + counts[2]! + counts[3]!;
  let start = at;
  for (let i = 0; i < records; i++) {
    start = at;
    at = skipName(msg, at);
    at += 8 + 2 + msg.readUInt16BE(at + 8);
  }
  const owner = readName(msg, start);
  const type = msg.readUInt16BE(owner.end);
  expect(type).toBe(250); // TSIG, the last record
  const rdata = owner.end + 10;
  const alg = readName(msg, rdata);
  let p = alg.end;
  const time = msg.subarray(p, p + 6);
  const fudge = msg.subarray(p + 6, p + 8);
  const macSize = msg.readUInt16BE(p + 8);
  const mac = msg.subarray(p + 10, p + 10 + macSize);
  p += 10 + macSize;
  const originalId = msg.subarray(p, p + 2);
  const errorAndOther = msg.subarray(p + 2, p + 6 + msg.readUInt16BE(p + 4));
  const unsigned = Buffer.from(msg.subarray(0, start));
  originalId.copy(unsigned, 0);
  unsigned.writeUInt16BE(counts[3]! - 1, 10);
  const variables = Buffer.concat([wireName(owner.name), Buffer.from([0, 255, 0, 0, 0, 0]), wireName(alg.name), time, fudge, errorAndOther]);
  const expected = createHmac(hash, secret).update(unsigned).update(variables).digest();
  return { keyName: owner.name, algorithm: alg.name, mac: Buffer.from(mac), expected };
}

/** Runs `nsupdate -k FILE` against a UDP socket of ours and returns the first message it sends. */
async function nsupdateSends(keyFile: string): Promise<Buffer> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const port = socket.address().port;
  const child = spawn('nsupdate', ['-k', keyFile], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const message = new Promise<Buffer>((resolve) => socket.once('message', (m) => resolve(m)));
    child.stdin.end(`server 127.0.0.1 ${port}\nzone example.test\nupdate add _acme-challenge.example.test. 60 TXT "t"\nsend\n`);
    const got = await Promise.race([message, exited.then((code) => Promise.reject(new Error(`nsupdate exited (${code}) before sending: ${stderr}`)))]);
    expect(stderr).toBe('');
    return got;
  } finally {
    child.kill('SIGKILL');
    await exited;
    socket.close();
  }
}

const HASH: Record<TsigAlgorithm, string> = {
  'hmac-md5': 'md5',
  'hmac-sha1': 'sha1',
  'hmac-sha224': 'sha224',
  'hmac-sha256': 'sha256',
  'hmac-sha384': 'sha384',
  'hmac-sha512': 'sha512',
};

describe.runIf(has('nsupdate'))('nsupdate -k', () => {
  for (const algorithm of TSIG_ALGORITHMS) {
    it(`reads the key file and signs with our ${algorithm} key`, async () => {
      const key = keyFor(algorithm);
      const file = path.join(dir, `${key.name}.key`);
      writeFileSync(file, nsupdateKeyFile(key), { mode: 0o600 });
      // The printed block holds the same file between its heredoc lines.
      expect(tsigConfigs(key, SERVER).nsupdate.text).toContain(nsupdateKeyFile(key).trimEnd());
      const msg = await nsupdateSends(file);
      const tsig = checkTsig(msg, Buffer.from(key.secret, 'base64'), HASH[algorithm]);
      expect(tsig.keyName).toBe(key.name);
      expect(tsig.algorithm).toBe(algorithm === 'hmac-md5' ? 'hmac-md5.sig-alg.reg.int' : algorithm);
      expect(tsig.mac.toString('hex')).toBe(tsig.expected.toString('hex'));
    });
  }
});

describe.runIf(PYTHON)("certbot-dns-rfc2136's own reading of the ini file", () => {
  const READ = `
import json, sys, base64
import dns.tsig
from certbot.plugins.dns_common import CredentialsConfiguration
from certbot_dns_rfc2136._internal.dns_rfc2136 import Authenticator, _RFC2136Client
out = []
for file in sys.argv[1:]:
    conf = CredentialsConfiguration(file, lambda var: 'dns_rfc2136_' + var)
    conf.require({'name': 'TSIG key name', 'secret': 'TSIG key secret', 'server': 'The target DNS server'})
    Authenticator._validate_credentials(Authenticator, conf)
    # As Authenticator._get_rfc2136_client builds its client:
    algorithm = Authenticator.ALGORITHMS.get(conf.conf('algorithm'), dns.tsig.HMAC_MD5)
    client = _RFC2136Client(conf.conf('server'), int(conf.conf('port') or Authenticator.PORT), conf.conf('name'), conf.conf('secret'), algorithm)
    [(name, key)] = client.keyring.items()
    secret = key.secret if hasattr(key, 'secret') else key
    out.append({'server': client.server, 'port': client.port, 'name': name.to_text(), 'algorithm': client.algorithm.to_text(), 'secret': base64.b64encode(secret).decode()})
print(json.dumps(out))
`;
  it('reads a key of each algorithm as we meant it', () => {
    const keys = TSIG_ALGORITHMS.map((a) => keyFor(a));
    const files = keys.map((key) => {
      const file = path.join(dir, `${key.name}.ini`);
      writeFileSync(file, `${tsigConfigs(key, SERVER).certbot.text}\n`, { mode: 0o600 });
      return file;
    });
    const r = spawnSync(PYTHON!, ['-c', READ, ...files], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual(
      keys.map((key) => ({
        server: '127.0.0.1',
        port: 5353,
        name: `${key.name}.`,
        algorithm: key.algorithm === 'hmac-md5' ? 'HMAC-MD5.SIG-ALG.REG.INT.' : `${key.algorithm}.`,
        secret: key.secret,
      })),
    );
  });

  it('would read a lower-case algorithm as HMAC-MD5 (why the file says it in capitals)', () => {
    const key = keyFor('hmac-sha256');
    const file = path.join(dir, 'lower.ini');
    writeFileSync(file, `${tsigConfigs(key, SERVER).certbot.text!.replace('HMAC-SHA256', 'hmac-sha256')}\n`, { mode: 0o600 });
    const r = spawnSync(PYTHON!, ['-c', READ, file], { encoding: 'utf8' });
    expect(JSON.parse(r.stdout)[0].algorithm).toBe('HMAC-MD5.SIG-ALG.REG.INT.');
  });
});

describe.runIf(has('lego'))("lego's rfc2136 provider", () => {
  it('takes exactly the variables the printed block sets', () => {
    const help = spawnSync('lego', ['dnshelp', '-c', 'rfc2136'], { encoding: 'utf8' }).stdout;
    const credentials = [...help.slice(help.indexOf('Credentials:'), help.indexOf('Additional Configuration:')).matchAll(/"(RFC2136_[A-Z_]+)"/g)]
      .map((m) => m[1])
      .sort();
    const set = [...tsigConfigs(keyFor('hmac-sha256'), SERVER).lego.text!.matchAll(/^export (RFC2136_[A-Z_]+)=/gm)].map((m) => m[1]).sort();
    expect(set).toEqual(credentials);
    expect(set).toEqual(['RFC2136_NAMESERVER', 'RFC2136_TSIG_ALGORITHM', 'RFC2136_TSIG_KEY', 'RFC2136_TSIG_SECRET']);
  });
});

describe.runIf(has('kubectl'))('kubectl create secret (the cert-manager block)', () => {
  it('makes the Secret the ClusterIssuer refers to, holding the secret as cert-manager reads it', () => {
    const key = keyFor('hmac-sha256');
    const line = tsigConfigs(key, SERVER)
      .certManager.text!.split('\n')
      .find((l) => l.startsWith('kubectl '))!;
    const r = spawnSync('sh', ['-c', `${line} --dry-run=client -o json`], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const secret = JSON.parse(r.stdout) as { metadata: { name: string; namespace: string }; data: Record<string, string> };
    expect(secret.metadata).toMatchObject({ name: `dnsplane-tsig-${key.name.replace(/\./g, '-')}`, namespace: 'cert-manager' });
    expect(Buffer.from(secret.data['tsig-secret']!, 'base64').toString()).toBe(key.secret);
    expect(tsigConfigs(key, SERVER).certManager.text).toContain(`              name: ${secret.metadata.name}\n              key: tsig-secret`);
  });
});

it('says which tools it checked', () => {
  const missing = [
    ['nsupdate', has('nsupdate')],
    ['certbot-dns-rfc2136', Boolean(PYTHON)],
    ['lego', has('lego')],
    ['kubectl', has('kubectl')],
  ]
    .filter(([, ok]) => !ok)
    .map(([t]) => t);
  if (missing.length)
    console.warn(
      `test/cli/tsig-tools.test.ts: not installed, not checked: ${missing.join(', ')} (apt-get install bind9-dnsutils python3-certbot-dns-rfc2136 lego)`,
    );
  expect(existsSync(dir)).toBe(true);
});
