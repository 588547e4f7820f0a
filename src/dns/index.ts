/**
 * Pure DNS knowledge: names, targets, endpoints, the diff. No I/O, nothing OVH-specific.
 */
export * from './types.js';
export * from './errors.js';
export {
  MAX_LABEL_LENGTH,
  MAX_NAME_LENGTH,
  absoluteName,
  findZone,
  isInZone,
  normalizeName,
  subDomainOf,
  toUnicode,
  type NameOptions,
} from './names.js';
export { CAA_TAGS, MAX_TXT_LENGTH, canonicalTarget, targetsEqual, type TargetContext } from './targets.js';
export { TXT_CHUNK_LENGTH, decodeTxt, formatTxtPresentation, parseTxtPresentation } from './txt.js';
export {
  MAX_TARGETS,
  MAX_TTL,
  compareEndpoints,
  compareStrings,
  endpointKey,
  endpointsEqual,
  normalizeEndpoint,
  normalizeEndpoints,
  normalizeTtl,
  parseRecordType,
  sameRecords,
  sortedUnique,
  validateEndpointSet,
  withLabels,
  type EndpointInput,
  type NormalizeEndpointOptions,
} from './endpoint.js';
export {
  REASON_CREATE_ONLY,
  REASON_UNOWNED,
  SHAREABLE_TYPES,
  SHARED_LABEL,
  applyChanges,
  isSharedChange,
  isSharedEndpoint,
  diffChangeSet,
  diffDesired,
  type ChangeSetOptions,
  type DiffInput,
  type DiffResult,
  type OwnerOf,
  type OwnerView,
  type SharedOwnerView,
} from './diff.js';
