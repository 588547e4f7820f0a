/**
 * Not-modified polls against the floor of any Node HTTP server, for a bench that wants the ratio:
 * a cheap client (keep-alive HTTP/1.1 connections in worker threads, each POSTing the same Connect
 * JSON request in a loop, bytes not decoded) and a bare `node:http` server (a child process, as
 * dnsplane is) that reads the JSON body, hashes the bearer token and answers the very bytes dnsplane
 * answered. Rounds are taken in turns, the order swapped each round, so that what else the machine
 * does falls on both alike. Used by bench/api.ts (one zone, with its own figures beside) and bench/estate.ts.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { median, nodeFlags } from './lib.js';

/**
 * The cheap client: `connections` keep-alive HTTP/1.1 connections spread over `workers` worker threads,
 * each POSTing the same Connect JSON request in a loop and reading the answer's bytes without decoding
 * them. The first answer of each connection is parsed and checked (`sets` record sets, or
 * notModified); every later one must be as long (the same bytes: nothing changes during the figure).
 */
const RAW_WORKER = `
  const { parentPort, workerData } = require('node:worker_threads');
  const http = require('node:http');
  const { url, headers, body, connections, sets } = workerData;
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const post = () => new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  const check = (r) => {
    if (r.status !== 200) throw new Error('HTTP ' + r.status + ': ' + r.body.toString('utf8', 0, 300));
    const z = JSON.parse(r.body.toString('utf8')).zones[0];
    if (sets === 0 ? z.notModified !== true : (z.endpoints ?? []).length !== sets) throw new Error('unexpected answer: ' + r.body.toString('utf8', 0, 300));
    return r.body.length;
  };
  parentPort.once('message', async (until) => {
    const started = performance.now();
    let calls = 0;
    try {
      await Promise.all(Array.from({ length: connections }, async () => {
        const length = check(await post());
        calls++;
        while (Date.now() < until) {
          const r = await post();
          if (r.status !== 200 || r.body.length !== length) check(r);
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

/**
 * Calls of the raw client on `at` for `seconds`, `connections` in `workers` threads; each answer is
 * checked (`sets` 0: not modified; else that many endpoints) or the same length as the first.
 */
export async function rawThroughput(
  at: string,
  token: string,
  request: object,
  opts: { sets?: number; seconds: number; connections: number; workers: number },
): Promise<{ calls: number; seconds: number }> {
  const workers = Math.min(opts.workers, opts.connections);
  const started = Array.from({ length: workers }, (_, w) => {
    const worker = new Worker(RAW_WORKER, {
      eval: true,
      workerData: {
        url: at,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'connect-protocol-version': '1' },
        body: JSON.stringify(request),
        connections: Math.floor(opts.connections / workers) + (w < opts.connections % workers ? 1 : 0),
        sets: opts.sets ?? 0,
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
    const until = Date.now() + opts.seconds * 1000;
    for (const w of started) w.worker.postMessage(until);
    const results = (await Promise.all(started.map((w) => w.next()))) as Array<{ calls?: number; seconds?: number; error?: string }>;
    const failed = results.find((r) => r.error);
    if (failed) throw new Error(`raw client: ${failed.error}`);
    return { calls: results.reduce((a, r) => a + r.calls!, 0), seconds: Math.max(...results.map((r) => r.seconds!)) };
  } finally {
    await Promise.all(started.map((w) => w.worker.terminate()));
  }
}

/**
 * The bare server: node:http alone, in a child process of its own (as dnsplane is), answering every
 * POST with `body` once it has read the request's JSON body (parsed) and hashed its bearer token:
 * what any Node HTTP server pays for a not-modified poll. No auth check, no routing, no metrics.
 */
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
  // Each line on stdin asks for the CPU this process has used so far (µs, user + system).
  require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
    const u = process.cpuUsage();
    process.stdout.write(String(u.user + u.system) + '\\n');
  });
  process.stdin.on('end', () => process.exit(0));
`;

export async function startBareServer(body: Buffer): Promise<{ url: string; cpuMicros(): Promise<number>; stop(): Promise<void> }> {
  // Under BENCH_CPU_PROF the bare server is profiled too, beside dnsplane (to compare them call for call).
  const dir = process.env['BENCH_CPU_PROF'];
  const prof = dir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(dir)}`, '--cpu-prof-name=bare-server.cpuprofile'] : [];
  const proc = spawn(process.execPath, [...nodeFlags('BENCH_BARE_NODE_FLAGS'), ...prof, '-e', BARE_SERVER, body.toString('base64')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: proc.stdout! });
  const nextLine = () =>
    new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      proc.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)));
    });
  const port = await nextLine();
  return {
    url: `http://127.0.0.1:${port}`,
    async cpuMicros() {
      const answer = nextLine();
      proc.stdin!.write('cpu\n');
      return Number(await answer);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.stdin!.end();
      }),
  };
}

/** The bytes of the server's answer to a raw Connect JSON request (to make the bare server answer the same). */
export async function rawAnswer(url: string, token: string, request: object): Promise<Buffer> {
  const res = await fetch(`${url}/dnsplane.v1.ZoneService/Records`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'connect-protocol-version': '1' },
    body: JSON.stringify(request),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
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
  const answer = await rawAnswer(url, token, request);
  if (!answer.toString('utf8').includes('"notModified":true')) throw new Error(`not a not-modified answer: ${answer.toString('utf8', 0, 200)}`);
  const bare = await startBareServer(answer);
  const seconds = opts.seconds ?? 2;
  const ratios: number[] = [];
  const ours: number[] = [];
  const theirs: number[] = [];
  try {
    for (let i = 0; i < (opts.rounds ?? 4); i++) {
      const rate = async (at: string) => {
        const r = await rawThroughput(at, token, request, { seconds, connections: 16, workers: 2 });
        return r.calls / r.seconds;
      };
      const a = () => rate(records);
      const b = () => rate(`${bare.url}/dnsplane.v1.ZoneService/Records`);
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
