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
    super(`${field}: ${rule}`);
  }
}
