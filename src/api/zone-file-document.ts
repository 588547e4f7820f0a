/**
 * A zone file read as a desired state (`dnsplane plan --zone-file`): the record sets it holds, one
 * endpoint each, in the zone its `$ORIGIN` (or the caller) names. Records are read as the cache reads
 * OVH's (ovh/mapping.ts recordsToEndpoints: targets in their canonical forms, a set's TTL its records'
 * lowest), so that a zone exported by `dnsplane zone export` and read back plans no change. The SOA and
 * the apex NS records are skipped (OVH keeps them; no tenant may write them). A record of a type dnsplane does not manage, a target that is not valid for
 * its type, or a name outside the zone is an error naming the file and the line; nothing is planned.
 */
import { create } from '@bufbuild/protobuf';
import { InvalidInputError } from '../dns/errors.js';
import { normalizeName } from '../dns/names.js';
import { isRecordType, RECORD_TYPES } from '../dns/types.js';
import { EndpointSchema, Policy } from '../gen/dnsplane/v1/zone_pb.js';
import { recordsToEndpoints } from '../ovh/mapping.js';
import type { OvhRecord } from '../ovh/types.js';
import { parseZoneFileLines, type ZoneFileLine } from '../ovh/zonefile.js';
import type { DesiredFile } from './desired-document.js';

/** The zone a zone file names: its first `$ORIGIN`, or undefined. */
export function zoneFileOrigin(text: string): string | undefined {
  const m = /^\s*\$ORIGIN\s+(\S+)/im.exec(text);
  return m ? m[1]!.replace(/\.$/, '').toLowerCase() : undefined;
}

/** Reads `text` (from `source`, named in errors) as the desired state of `zone` (default: its $ORIGIN). */
export function desiredFromZoneFile(text: string, source: string, zone?: string): DesiredFile {
  const named = zone ?? zoneFileOrigin(text);
  if (named === undefined) throw new InvalidInputError('--zone', `${source} has no $ORIGIN line: name its zone with --zone ZONE`);
  const origin = normalizeName(named, '--zone').replace(/\.$/, '');
  let lines: ZoneFileLine[];
  try {
    lines = parseZoneFileLines(text, origin);
  } catch (e) {
    throw new InvalidInputError(source, (e as Error).message);
  }
  const records: OvhRecord[] = lines
    .filter((l) => !(l.type === 'NS' && l.subDomain === ''))
    .map((l) => {
      if (!isRecordType(l.type)) {
        throw new InvalidInputError(`${source} line ${l.line}`, `type ${l.type} is not one dnsplane manages (${RECORD_TYPES.join(', ')})`);
      }
      return { id: String(l.line), zone: origin, subDomain: l.subDomain, fieldType: l.type, target: l.target, ttl: l.ttl };
    });
  const mapping = recordsToEndpoints(records, origin);
  const invalid = mapping.warnings.find((w) => / is not a valid /.test(w.message));
  if (invalid) throw new InvalidInputError(`${source} line ${invalid.recordIds[0]}`, invalid.message.replace(/; kept as it is$/, ''));
  return {
    zones: [origin],
    policy: Policy.SYNC,
    endpoints: mapping.endpoints.map((e) => create(EndpointSchema, { dnsName: e.dnsName, recordType: e.recordType, targets: [...e.targets], ttl: e.ttl })),
  };
}
