/**
 * A message (or a name, or record data) that breaks the wire format: the server answers FORMERR
 * (RFC 1035 §4.1.1). The message says what was wrong and where, for the log; it never holds secrets.
 */
export class WireFormatError extends Error {
  override readonly name = 'WireFormatError';
  constructor(message: string) {
    // Hostile input is common on a DNS port: no stack trace to capture for each.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}
