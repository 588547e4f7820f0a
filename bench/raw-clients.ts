/**
 * Not-modified polls against the floor of any Node HTTP server, for a bench that wants the ratio:
 * a cheap client (keep-alive HTTP/1.1 connections in worker threads, each POSTing the same Connect
 * JSON request in a loop, bytes not decoded) and a bare `node:http` server (a child process, as
 * dnsplane is) that reads the JSON body, hashes the bearer token and answers the very bytes dnsplane
 * answered. Rounds are taken in turns, the order swapped each round, so that what else the machine
 * does falls on both alike. (bench/api.ts measures the same at one zone, with its own figures beside.)
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { median } from './lib.js';

const RAW_WORKER = `
  const { parentPort, workerData } = require('node:worker_threads');
  const http = require('node:http');
  const { url, headers, body, connections } = workerData;
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const post = () => new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let length = 0;
      res.on('data', (c) => (length += c.length));
      res.on('end', () => resolve({ status: res.statusCode, length }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  parentPort.once('message', async (until) => {
    const started = performance.now();
    let calls = 0;
    try {
      await Promise.all(Array.from({ length: connections }, async () => {
        const first = await post();
        if (first.status !== 200) throw new Error('HTTP ' + first.status);
        calls++;
        while (Date.now() < until) {
          const r = await post();
          if (r.status !== 200 || r.length !== first.length) throw new Error('HTTP ' + r.status + ', ' + r.length + ' bytes');
          calls++;
        }
      }));
      parentPort.postMessage({ calls, seconds: (performance.now() - started) / 1000 });
    } catch (e) {
      parentPort.postMessage({ error: String(e && e.stack || e) });
    }
    agent.destroy();
  });
  parentPort.postMessage('ready');
`;

/** Calls per second of the raw client on `url` for `seconds`, `connections` in `workers` threads. */
async function rawRate(url: string, token: string, request: object, seconds: number, connections = 16, workers = 2): Promise<number> {
  const started = Array.from({ length: workers }, (_, w) => {
    const worker = new Worker(RAW_WORKER, {
      eval: true,
      workerData: {
        url,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'connect-protocol-version': '1' },
        body: JSON.stringify(request),
        connections: Math.floor(connections / workers) + (w < connections % workers ? 1 : 0),
      },
    });
    const messages: unknown[] = [];
    const waiters: ((m: unknown) => void)[] = [];
    worker.on('message', (m) => (waiters.length ? waiters.shift()!(m) : messages.push(m)));
    worker.once('error', (e) => (waiters.length ? waiters.shift()!({ error: String(e) }) : messages.push({ error: String(e) })));
    const next = () => new Promise<unknown>((resolve) => (messages.length ? resolve(messages.shift()) : waiters.push(resolve)));
    return { worker, next };
  });
  try {
    for (const w of started) if ((await w.next()) !== 'ready') throw new Error('a raw client worker failed to start');
    const until = Date.now() + seconds * 1000;
    for (const w of started) w.worker.postMessage(until);
    const results = (await Promise.all(started.map((w) => w.next()))) as Array<{ calls?: number; seconds?: number; error?: string }>;
    const failed = results.find((r) => r.error);
    if (failed) throw new Error(`raw client: ${failed.error}`);
    return results.reduce((a, r) => a + r.calls!, 0) / Math.max(...results.map((r) => r.seconds!));
  } finally {
    await Promise.all(started.map((w) => w.worker.terminate()));
  }
}

const BARE_SERVER = `
  const http = require('node:http');
  const { hash } = require('node:crypto');
  const body = Buffer.from(process.argv[1], 'base64');
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const m = /^Bearer\\s+(\\S+)\\s*$/i.exec(req.headers.authorization || '');
      if (!m || hash('sha256', m[1], 'hex').length !== 64) { res.writeHead(401).end(); return; }
      res.writeHead(200, ['content-type', 'application/json', 'content-length', String(body.length)]);
      res.end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
`;

/** A bare node:http server answering every POST with `body` (a child process); its URL and stop(). */
async function startBareServer(body: Buffer): Promise<{ url: string; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, ['-e', BARE_SERVER, body.toString('base64')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.stdin!.end();
      }),
  };
}

/**
 * Not-modified polls of `request` (a Records request naming the current generations) on dnsplane at
 * `url` against a bare server answering the same bytes: `rounds` rounds of `seconds` each, in turns.
 */
export async function notModifiedAgainstBare(
  url: string,
  token: string,
  request: object,
  opts: { rounds?: number; seconds?: number } = {},
): Promise<{ ratio: number; ours: number; bare: number; rounds: number[] }> {
  const records = `${url}/dnsplane.v1.ZoneService/Records`;
  const res = await fetch(records, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'connect-protocol-version': '1' },
    body: JSON.stringify(request),
  });
  const answer = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || !answer.toString('utf8').includes('"notModified":true'))
    throw new Error(`not a not-modified answer: HTTP ${res.status} ${answer.toString('utf8', 0, 200)}`);
  const bare = await startBareServer(answer);
  const seconds = opts.seconds ?? 2;
  const ratios: number[] = [];
  const ours: number[] = [];
  const theirs: number[] = [];
  try {
    for (let i = 0; i < (opts.rounds ?? 4); i++) {
      const a = () => rawRate(records, token, request, seconds);
      const b = () => rawRate(`${bare.url}/dnsplane.v1.ZoneService/Records`, token, request, seconds);
      let x: number;
      let y: number;
      if (i % 2 === 0) {
        x = await a();
        y = await b();
      } else {
        y = await b();
        x = await a();
      }
      ours.push(x);
      theirs.push(y);
      ratios.push(x / y);
    }
  } finally {
    await bare.stop();
  }
  return { ratio: median(ratios), ours: median(ours), bare: median(theirs), rounds: ratios };
}
