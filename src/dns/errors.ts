/**
 * Bad input. `field` names where (e.g. `endpoints[2].targets[0]`), `rule` says what was broken.
 * The api room maps it to InvalidArgument.
 */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    // Bad input, not a bug: no stack to capture. A change set of 50,000 refused entries would spend
    // a third of a second on stack traces alone.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(`${field}: ${rule}`);
    Error.stackTraceLimit = limit;
  }
}
