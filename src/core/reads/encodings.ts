/**
 * The wire forms of the read cache's views (core/reads/read-cache.ts): the bytes a view is sent as in
 * one form (Connect JSON, protobuf, the webhook's JSON), made once per (view, form) and kept beside the
 * view while the bound allows, so that every tenant asking for the same view of a generation is sent
 * the same bytes, encoded once. A view is known by its endpoints array, the one the cache handed out.
 */
import type { Endpoint } from '../../dns/types.js';
import type { Kept } from './kept-bytes.js';
import type { ZoneAnswers } from './answers.js';

/** What the encodings ask of the cache that keeps them: to account an item, to mark one as used. */
export interface EncodingsHost {
  account(key: string, item: Kept): void;
  touch(key: string): void;
  /** Counts an encoding made (stats). */
  encoded(): void;
}

export class Encodings {
  private readonly kept = new Map<string, Promise<Uint8Array>>();
  /** The view each endpoints array handed out is of (its key). */
  private readonly views = new WeakMap<readonly Endpoint[], { key: string; zone: string; generation: bigint; view: string }>();

  constructor(private readonly host: EncodingsHost) {}

  /** The views of a generation's answers: the includeForeign one ('*') and each owner's. */
  register(zone: string, generation: bigint, answers: ZoneAnswers): void {
    const prefix = `${zone}\u0000${generation}`;
    this.views.set(answers.all, { key: `${prefix}\u0000*`, zone, generation, view: '*' });
    for (const [owner, list] of answers.byOwner) this.views.set(list, { key: `${prefix}\u0000${owner}`, zone, generation, view: owner });
  }

  /**
   * The bytes `encode` makes of the view whose endpoints array the cache handed out, kept per (view,
   * form) while the bound allows: callers that ask together share one encoding. For an array the
   * cache did not hand out (a tenant's empty view), `encode` runs each time.
   */
  of(endpoints: readonly Endpoint[], form: string, encode: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const v = this.views.get(endpoints);
    if (v === undefined) {
      this.host.encoded();
      return encode();
    }
    const key = `e\u0000${v.key}\u0000${form}`;
    const hit = this.kept.get(key);
    if (hit) {
      this.host.touch(key);
      return hit;
    }
    this.host.encoded();
    const p = encode();
    this.kept.set(key, p);
    const forget = () => {
      if (this.kept.get(key) === p) this.kept.delete(key);
    };
    p.then(
      (bytes) =>
        this.host.account(key, { kind: 'encoding', zone: v.zone, generation: v.generation, view: v.view, form, bytes: bytes.byteLength, drop: forget }),
      forget,
    );
    return p;
  }
}
