// Types for async-exit-hook 2.x: only what dnsplane uses (see src/store/embedded.ts).
declare module 'async-exit-hook' {
  interface AsyncExitHook {
    /** Removes the listener async-exit-hook put on `process` for this event. */
    unhookEvent(event: string): void;
  }
  const hook: AsyncExitHook;
  export default hook;
}
