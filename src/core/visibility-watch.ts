/**
 * Who waits for which visibility rows in this process (core/visibility/visibility.ts's waitVisible), woken by
 * the server's listener (NOTIFY dnsplane_visibility: `notify`); a reconnected listener wakes everyone
 * (`wakeAll`: notifications may have been missed). server/server.ts builds one and hands it in as
 * ctx.visibility. Apart from visibility.ts so that CoreContext can hold one without importing what
 * reads the rows, as the credential caches are (core/keys/cache.ts).
 */
export class VisibilityWatch {
  private readonly waiters = new Set<{ ids: ReadonlySet<string>; wake: () => void }>();

  subscribe(ids: readonly string[], wake: () => void): () => void {
    const waiter = { ids: new Set(ids), wake };
    this.waiters.add(waiter);
    return () => this.waiters.delete(waiter);
  }

  notify(journalId: string): void {
    for (const w of this.waiters) if (w.ids.has(journalId)) w.wake();
  }

  wakeAll(): void {
    for (const w of this.waiters) w.wake();
  }

  get waiting(): number {
    return this.waiters.size;
  }
}
