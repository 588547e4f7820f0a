/**
 * Waiting for a condition a test cannot be told about (another process, the database, the
 * simulator): polled every 25 ms until it holds, with a bound that only catches a hang.
 */

/**
 * The first value fn gives that is neither undefined nor false (a condition: until it is true);
 * throws naming `what` after timeoutMs.
 */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
