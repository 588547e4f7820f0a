// Types for @ovhcloud/node-ovh 3.x, which ships none. Only what dnsplane uses.
declare module '@ovhcloud/node-ovh' {
  interface OvhClientParams {
    /** ovh-eu, ovh-ca, ovh-us, … (sets host). */
    endpoint?: string;
    host?: string;
    port?: number;
    basePath?: string;
    appKey?: string;
    appSecret?: string;
    consumerKey?: string;
    /** Socket inactivity timeout in ms; the request is aborted after it. */
    timeout?: number;
    /** Server time minus local time, in seconds; learned from /auth/time when null. */
    apiTimeDiff?: number | null;
    debug?: boolean | ((...args: unknown[]) => void);
    warn?: (...args: unknown[]) => void;
  }

  /**
   * What the promise API rejects with: `error` is the HTTP status, a negative errno (or an Error) on
   * connection failure, or a string for an unparsable body; `message` is OVH's message when there is one.
   */
  interface OvhClientRejection {
    error: number | string | Error;
    message?: string | null;
  }

  interface OvhClient {
    apiTimeDiff: number | null;
    requestPromised(method: string, path: string, params?: Record<string, unknown>): Promise<unknown>;
    request(method: string, path: string, params: Record<string, unknown>, callback: (error: unknown, response: unknown) => void): void;
  }

  function ovh(params: OvhClientParams): OvhClient;
  export default ovh;
  export type { OvhClient, OvhClientParams, OvhClientRejection };
}
