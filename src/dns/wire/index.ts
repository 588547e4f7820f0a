/**
 * The DNS wire format, pure: messages with UPDATE's four sections, names (compression, loop-safe
 * decompression, canonical form), the record data dnsplane manages, TSIG, and the conversion between
 * wire records and dnsplane's record model. No I/O: the DNS door (src/dnsserver/) does the sockets.
 */
export * from './codes.js';
export { WireFormatError } from './errors.js';
export { MAX_WIRE_NAME, foldCase, nameWire, readName, sameName } from './names.js';
export { knownType, readRecordData, typeOfData, writeRecordData, type RecordData, type TsigData } from './rdata.js';
export { MessageTooLargeError, Writer } from './writer.js';
export {
  MAX_MESSAGE_BYTES,
  MAX_RECORDS,
  encodeMessage,
  optRecord,
  parseMessage,
  readHeader,
  responseHeader,
  updateSections,
  writeHeader,
  writeRecord,
  type Header,
  type Message,
  type Parsed,
  type Question,
  type ResourceRecord,
} from './message.js';
export {
  DEFAULT_FUDGE,
  TSIG_WIRE,
  algorithmOf,
  appendUnsignedTsigError,
  signContinuation,
  signMessage,
  timeOtherData,
  tsigKeyName,
  verifyContinuation,
  verifyTsig,
  withoutTsig,
  type SignOptions,
  type TsigAlgorithm,
  type TsigSigner,
  type TsigVerdict,
} from './tsig.js';
export { packMessagesSteps } from './pack.js';
export { dataOfTarget, recordTypeOf, targetOfData, txtStrings, wireTypeOf } from './targets.js';
