/**
 * A JWT issuer as a Kubernetes cluster (or SPIRE's OIDC discovery provider) is one, for the tests of
 * workload tokens: HTTPS on loopback (a self-signed certificate, `caPem` the CA to trust), its
 * discovery document at {issuer}/.well-known/openid-configuration naming its JWKS, the JWKS served
 * with a week-long Cache-Control (which dnsplane must not honour), every request counted; tokens
 * minted with the claims the kubelet puts in a projected ServiceAccount token (iss, sub, aud, exp, iat,
 * nbf, jti, kubernetes.io). Its keys can be rotated, and it can be taken down (503) and back up.
 */
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import { generateCertificate } from '../../src/ovhsim/cert.js';

export type KeyAlg = 'RS256' | 'ES256';

interface SigningKey {
  kid: string;
  alg: KeyAlg;
  privateKey: CryptoKeyLike;
  publicJwk: JWK;
}
type CryptoKeyLike = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

export interface MintOptions {
  /** Default: the issuer's "system:serviceaccount:external-dns:external-dns". */
  sub?: string;
  /** Default ["dnsplane"] (the kubelet writes an array). */
  aud?: string | string[];
  /** Seconds from now of iat (negative: in the past). Default 0. */
  iatOffset?: number;
  /** Seconds from iat to exp. Default 600 (the manifests' expirationSeconds). */
  lifetime?: number;
  /** Seconds from iat to nbf. Default 0. */
  nbfOffset?: number;
  /** Sign with this key (default the newest). */
  kid?: string;
  /** Put this kid in the header instead of the signing key's. */
  headerKid?: string;
  /** Claims to add. */
  extra?: JWTPayload;
  /** The iss claimed (default: this issuer's URL): a forgery. */
  iss?: string;
}

export interface TestIssuer {
  /** The issuer URL (the tokens' iss). */
  url: string;
  /** The CA (PEM) a client must trust for its HTTPS. */
  caPem: string;
  /** The paths requested so far, in order. */
  requests(): string[];
  /** A projected-ServiceAccount-style token. */
  mint(opts?: MintOptions): Promise<string>;
  /** A new key, published at once beside the others (or alone, with `drop`); its kid. */
  rotate(opts?: { alg?: KeyAlg; drop?: boolean }): Promise<string>;
  /** The public JWKS it serves now (what `kubectl get --raw /openid/v1/jwks` prints). */
  jwks(): { keys: JWK[] };
  /** The newest key's kid and its public key. */
  current(): { kid: string; publicJwk: JWK };
  /** Down: every request answered 503 (counted); up: served again. */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

async function newKey(alg: KeyAlg): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = randomUUID();
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** An issuer with one key of `alg`; `path`: the issuer URL's path (e.g. "/id/ABC", as EKS has). */
export async function startIssuer(opts: { alg?: KeyAlg; path?: string; sub?: string } = {}): Promise<TestIssuer> {
  const tls = await generateCertificate();
  const keys: SigningKey[] = [await newKey(opts.alg ?? 'RS256')];
  const requests: string[] = [];
  let down = false;
  let url = '';
  const path = opts.path ?? '';
  const jwks = () => ({ keys: keys.map((k) => k.publicJwk) });
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    requests.push(req.url ?? '');
    if (down) {
      res.writeHead(503).end('down');
      return;
    }
    const send = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=604800' }).end(JSON.stringify(body));
    if (req.url === `${path}/.well-known/openid-configuration`) {
      send({
        issuer: url,
        jwks_uri: `${url}/openid/v1/jwks`,
        response_types_supported: ['id_token'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256', 'ES256'],
      });
    } else if (req.url === `${path}/openid/v1/jwks`) {
      send(jwks());
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  const sub = opts.sub ?? 'system:serviceaccount:external-dns:external-dns';

  return {
    url,
    caPem: tls.cert,
    requests: () => [...requests],
    async mint(m = {}) {
      const key = m.kid ? keys.find((k) => k.kid === m.kid) : keys[keys.length - 1];
      if (!key) throw new Error(`no key ${m.kid}`);
      const iat = Math.floor(Date.now() / 1000) + (m.iatOffset ?? 0);
      const subject = m.sub ?? sub;
      const [, ns = 'default', sa = 'default'] = /^system:serviceaccount:([^:]+):(.+)$/.exec(subject) ?? [];
      return new SignJWT({
        aud: m.aud ?? ['dnsplane'],
        'kubernetes.io': {
          namespace: ns,
          node: { name: 'node-1', uid: randomUUID() },
          pod: { name: `${sa}-7d9f8b6c5d-x2x4q`, uid: randomUUID() },
          serviceaccount: { name: sa, uid: randomUUID() },
        },
        jti: randomUUID(),
        ...m.extra,
      })
        .setProtectedHeader({ alg: key.alg, kid: m.headerKid ?? key.kid })
        .setIssuer(m.iss ?? url)
        .setSubject(subject)
        .setIssuedAt(iat)
        .setNotBefore(iat + (m.nbfOffset ?? 0))
        .setExpirationTime(iat + (m.lifetime ?? 600))
        .sign(key.privateKey);
    },
    async rotate(r = {}) {
      const key = await newKey(r.alg ?? keys[keys.length - 1]!.alg);
      if (r.drop) keys.splice(0, keys.length);
      keys.push(key);
      return key.kid;
    },
    jwks,
    current: () => ({ kid: keys[keys.length - 1]!.kid, publicJwk: keys[keys.length - 1]!.publicJwk }),
    setDown(d) {
      down = d;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
