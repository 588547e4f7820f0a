/**
 * A TLS front for a dnsplane server in tests, as an ingress in front of it: HTTPS on its own port,
 * each request passed to the server's plain-HTTP API port as it came (method, path, headers — Host
 * included — and body) and the answer passed back. The served OVH API is reached through it by
 * clients that speak only HTTPS (@ovhcloud/node-ovh); its certificate is trusted through the global
 * https agent, the one node-ovh uses.
 */
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { trustExtraCas } from '../../src/ovh/client/ca-trust.js';
import { generateCertificate } from '../../src/ovhsim/cert.js';

export interface TlsFront {
  port: number;
  close(): Promise<void>;
}

export async function startTlsFront(target: { port: number }): Promise<TlsFront> {
  const tls = await generateCertificate('127.0.0.1');
  trustExtraCas([tls.cert]);
  const agent = new http.Agent({ keepAlive: true });
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const upstream = http.request({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
    },
  };
}
