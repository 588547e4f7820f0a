/**
 * The one way to say what an unknown thrown value was: its message when it is an Error, its string
 * form otherwise. A leaf module (it imports nothing), so that every room may use it — ovhsim/ and
 * store/ included — instead of writing the same conditional again.
 */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
