/**
 * YAML parsed in a worker thread, for documents the API reads (AdminService.ParseDesiredState).
 *
 * The `yaml` package reads about a megabyte a second, in one synchronous call that cannot be cut into
 * slices: a 2 MB document pasted into the console would hold every tenant's calls for a second. One
 * worker, started on first use and unref'd (it never keeps the process alive), parses documents one
 * at a time; the API's thread only receives the result. A document whose endpoint list is longer
 * than the caller's limit is refused in the worker, so that a huge list is never copied back.
 * A worker that dies (out of memory on a hostile document) fails the calls it had, and the next call
 * starts a new one.
 */
import { Worker } from 'node:worker_threads';

export type YamlResult = { doc: unknown } | { tooMany: number } | { error: string };

interface Pending {
  resolve(r: YamlResult): void;
  reject(e: Error): void;
}

/**
 * Memory one parse may use. The `yaml` package needs ~90 bytes of heap per byte of YAML at its peak:
 * a document of ParseDesiredState's 2 MiB fits; a worker that runs out fails its calls (and the next
 * call starts a new one).
 */
const WORKER_HEAP_MB = 512;

export class YamlOffThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  /** Parses `text`; `maxItems` bounds the endpoint list (a top-level list, or `endpoints`). */
  parse(text: string, maxItems: number): Promise<YamlResult> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise<YamlResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, text, maxItems });
    });
  }

  /** Stops the worker (tests; the process exits without it anyway). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }

  private start(): Worker {
    const worker = new Worker(new URL('./yaml-worker.mjs', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.unref();
    worker.on('message', (m: { id: number } & YamlResult) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      p?.resolve(m);
    });
    const fail = (e: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    };
    worker.on('error', (e) => fail(new Error(`the YAML worker failed: ${e.message}`)));
    worker.on('exit', (code) => fail(new Error(`the YAML worker exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }
}
