/**
 * grpc.health.v1: what Kubernetes' gRPC probes, load balancers and service meshes ask. The answer
 * is the one /readyz gives: SERVING only while the server is not stopping and its database answers.
 * Every service depends on the database, so each one's status is the server's.
 */
import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import { Health, HealthCheckResponse_ServingStatus as Status } from '../gen/grpc/health/v1/health_pb.js';

export interface HealthOptions {
  /** undefined when ready, else why not ("database unavailable", "shutting down"). */
  readiness: () => Promise<string | undefined>;
  /** Aborted when the server starts stopping: watchers get NOT_SERVING and their streams end. */
  stopping: AbortSignal;
  /** The fully qualified names of the services the server serves. */
  services: () => string[];
  /** How often a Watch stream re-checks readiness (default 5 s). */
  watchIntervalMs?: number;
}

export function registerHealth(router: ConnectRouter, opts: HealthOptions): void {
  const interval = opts.watchIntervalMs ?? 5000;
  // Concurrent checks (many watchers, probes) share one database round trip.
  let inFlight: Promise<Status> | undefined;
  const status = (): Promise<Status> => {
    if (opts.stopping.aborted) return Promise.resolve(Status.NOT_SERVING);
    inFlight ??= opts
      .readiness()
      .then(
        (reason) => (reason === undefined ? Status.SERVING : Status.NOT_SERVING),
        () => Status.NOT_SERVING,
      )
      .finally(() => (inFlight = undefined));
    return inFlight;
  };
  const known = (service: string) => service === '' || opts.services().includes(service);

  router.service(Health, {
    async check(req) {
      if (!known(req.service)) {
        throw new ConnectError(`service: "${req.service}" is not served here; ask for "" (the server) or one of ${opts.services().join(', ')}`, Code.NotFound);
      }
      return { status: await status() };
    },
    async *watch(req, hc) {
      if (!known(req.service)) {
        // The protocol: say SERVICE_UNKNOWN and keep the stream open (the set of services is fixed here).
        yield { status: Status.SERVICE_UNKNOWN };
        await abortedOrStopping(hc.signal, opts.stopping, Infinity);
        return;
      }
      let last: Status | undefined;
      for (;;) {
        const now = await status();
        if (now !== last) {
          yield { status: now };
          last = now;
        }
        if (opts.stopping.aborted || hc.signal.aborted) return;
        await abortedOrStopping(hc.signal, opts.stopping, interval);
        if (hc.signal.aborted) return;
      }
    },
  });
}

/** Resolves after ms, or as soon as either signal aborts. */
function abortedOrStopping(a: AbortSignal, b: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve) => {
    if (a.aborted || b.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      a.removeEventListener('abort', done);
      b.removeEventListener('abort', done);
      resolve();
    };
    const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
    a.addEventListener('abort', done, { once: true });
    b.addEventListener('abort', done, { once: true });
  });
}
