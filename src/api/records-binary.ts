/**
 * ZoneService.Records answered in the binary format (binary Connect, gRPC, gRPC-Web: what the CLI,
 * the webhook sidecar and most clients built on Connect or gRPC speak) from bytes encoded once per
 * view: each zone's ZoneRecords is encoded in slices that yield (a zone may hold 50,000 record sets)
 * and kept by the read cache (ReadCache.encoded, within its byte bound), and every caller of the view
 * — every includeForeign caller of a generation — is sent the same bytes.
 *
 * Connect offers no way to send bytes already encoded, but protobuf-es writes a message's unknown
 * fields as they are: the answer is a RecordsResponse whose zones are unknown fields (field 1, each
 * a zone's kept bytes), which toBinary copies out and any reader parses as the zones they are. The
 * JSON form has no such thing, so a request Connect answers in JSON (GET, a browser's, one with a
 * timeout header: api/records-json.ts takes the others) is converted and encoded per request.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import type { HandlerContext } from '@connectrpc/connect';
import type { ZoneRecords } from '../core/records/records.js';
import type { ReadCache } from '../core/reads/read-cache.js';
import type { Slicer } from '../core/slices.js';
import { RecordsResponseSchema, ZoneRecordsSchema, type RecordsResponse } from '../gen/dnsplane/v1/zone_pb.js';
import { endpointToPb } from './convert.js';

/** The form of the bytes kept in the read cache: one ZoneRecords, length-prefixed (a RecordsResponse.zones element after its tag). */
const FORM = 'proto-zone';

/** Endpoints encoded per slice check. */
const ENDPOINTS_PER_CHUNK = 256;

/** RecordsResponse.zones. */
const ZONES_FIELD = RecordsResponseSchema.field.zones.number;

/**
 * Whether Connect writes this call's answer in the binary format: a POST whose content type is
 * protobuf's (Connect's application/proto, gRPC's and gRPC-Web's with or without +proto; gRPC-Web
 * text arrives here as binary gRPC-Web, api/http.ts), or a Connect GET with encoding=proto.
 */
export function answersInBinary(hc: Pick<HandlerContext, 'requestMethod' | 'requestHeader' | 'url'>): boolean {
  if (hc.requestMethod === 'GET') return new URL(hc.url, 'http://localhost').searchParams.get('encoding') === 'proto';
  return BINARY.test(hc.requestHeader.get('content-type') ?? '');
}

const BINARY = /^application\/(proto|grpc|grpc\+proto|grpc-web|grpc-web\+proto)\s*(;.*)?$/i;

/** One zone's ZoneRecords as toBinary writes it, length-prefixed, its endpoints encoded in slices. */
export async function encodeZoneRecords(z: ZoneRecords, slicer: Slicer): Promise<Uint8Array> {
  const parts: Uint8Array[] = [toBinary(ZoneRecordsSchema, create(ZoneRecordsSchema, { zone: z.zone, generation: z.generation, notModified: z.notModified }))];
  // Endpoints are the last field: a chunk's encoding (only field 4 set) follows the head as toBinary of the whole would.
  for (let i = 0; i < z.endpoints.length; i += ENDPOINTS_PER_CHUNK) {
    await slicer.check();
    parts.push(toBinary(ZoneRecordsSchema, create(ZoneRecordsSchema, { endpoints: z.endpoints.slice(i, i + ENDPOINTS_PER_CHUNK).map(endpointToPb) })));
  }
  await slicer.check();
  const length = parts.reduce((n, p) => n + p.length, 0);
  return Buffer.concat([new BinaryWriter().uint32(length).finish(), ...parts]);
}

/** The RecordsResponse of `zones`, each zone's bytes kept per view (encoded once) and written as they are. */
export async function recordsResponseBinary(cache: ReadCache, zones: readonly ZoneRecords[], slicer: Slicer): Promise<RecordsResponse> {
  const unknown = [];
  for (const z of zones) {
    const data =
      z.notModified || z.endpoints.length === 0
        ? await encodeZoneRecords(z, slicer)
        : await cache.encoded(z.endpoints, FORM, () => encodeZoneRecords(z, slicer));
    unknown.push({ no: ZONES_FIELD, wireType: WireType.LengthDelimited, data });
  }
  return Object.assign(create(RecordsResponseSchema), { $unknown: unknown });
}
