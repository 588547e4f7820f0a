/**
 * Real proxies in front of a server under test, from Debian's packages: HAProxy (`send-proxy-v2`,
 * `send-proxy`, or HTTP mode with `option forwardfor`) and nginx (its stream module's
 * `proxy_protocol on`, or HTTP with `X-Forwarded-For: $proxy_add_x_forwarded_for`). Each runs in the
 * foreground with its configuration in a temporary directory, on a free loopback port, and connects to
 * the upstream from 127.0.0.1. Missing binaries: see describeWithTools (dns-tools.ts) and PROXIES_INSTALL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { until } from './until.js';

export const PROXIES_INSTALL = 'apt-get install -y haproxy nginx libnginx-mod-stream';
export const NGINX_STREAM_MODULE = '/usr/lib/nginx/modules/ngx_stream_module.so';

export type HaproxyMode = 'send-proxy-v2' | 'send-proxy' | 'forwardfor';
export type NginxMode = 'proxy_protocol' | 'forwardfor';

export interface RealProxy {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  /** What the proxy wrote on its standard error (its warnings and errors). */
  log(): string;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starts the proxy `config(port, dir)` describes with `command(dir)`, on a free port (tried again if another process took it first). */
async function startProxy(name: string, config: (port: number, dir: string) => { file: string; text: string; args: string[] }): Promise<RealProxy> {
  for (let attempt = 0; ; attempt++) {
    const dir = mkdtempSync(path.join(tmpdir(), `dnsplane-${name}-`));
    const port = await freePort();
    const { file, text, args } = config(port, dir);
    writeFileSync(path.join(dir, file), text);
    const child: ChildProcess = spawn(name, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    let exited = false;
    child.once('exit', () => (exited = true));
    const stop = async () => {
      if (!exited) {
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      await until(`${name} listening on ${port}`, async () => exited || (await accepts(port)));
    } catch (e) {
      await stop();
      throw e;
    }
    if (exited) {
      await stop();
      if (attempt < 3 && /address already in use|cannot bind|bind\(\)/i.test(stderr)) continue;
      throw new Error(`${name} did not start: ${stderr}`);
    }
    return { url: `http://127.0.0.1:${port}`, port, log: () => stderr, close: stop };
  }
}

/** HAProxy on a free port, in front of 127.0.0.1:upstreamPort. */
export function startHaproxy(upstreamPort: number, mode: HaproxyMode): Promise<RealProxy> {
  return startProxy('haproxy', (port) => {
    const http = mode === 'forwardfor';
    const text = [
      'global',
      '  maxconn 4096',
      'defaults',
      `  mode ${http ? 'http' : 'tcp'}`,
      ...(http ? ['  option forwardfor'] : []),
      '  timeout connect 5s',
      '  timeout client 120s',
      '  timeout server 120s',
      'frontend front',
      `  bind 127.0.0.1:${port}`,
      '  default_backend dnsplane',
      'backend dnsplane',
      `  server one 127.0.0.1:${upstreamPort}${http ? '' : ` ${mode}`}`,
      '',
    ].join('\n');
    return { file: 'haproxy.cfg', text, args: ['-db', '-f', 'haproxy.cfg'] };
  });
}

/** nginx on a free port, in front of 127.0.0.1:upstreamPort. */
export function startNginx(upstreamPort: number, mode: NginxMode): Promise<RealProxy> {
  return startProxy('nginx', (port, dir) => {
    const common = [
      ...(mode === 'proxy_protocol' ? [`load_module ${NGINX_STREAM_MODULE};`] : []),
      // As root, workers would switch to nobody, who cannot reach the temporary directory.
      ...(process.getuid?.() === 0 ? ['user root;'] : []),
      'daemon off;',
      'worker_processes 1;',
      `pid ${dir}/nginx.pid;`,
      `error_log ${dir}/error.log warn;`,
      'events { worker_connections 4096; }',
    ];
    const body =
      mode === 'proxy_protocol'
        ? ['stream {', `  server { listen 127.0.0.1:${port}; proxy_pass 127.0.0.1:${upstreamPort}; proxy_protocol on; }`, '}']
        : [
            'http {',
            '  access_log off;',
            ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
            `  upstream dnsplane { server 127.0.0.1:${upstreamPort}; keepalive 16; }`,
            '  server {',
            `    listen 127.0.0.1:${port};`,
            '    location / {',
            '      proxy_pass http://dnsplane;',
            '      proxy_http_version 1.1;',
            '      proxy_set_header Connection "";',
            '      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
            '    }',
            '  }',
            '}',
          ];
    return { file: 'nginx.conf', text: [...common, ...body, ''].join('\n'), args: ['-p', dir, '-e', `${dir}/error.log`, '-c', `${dir}/nginx.conf`] };
  });
}
