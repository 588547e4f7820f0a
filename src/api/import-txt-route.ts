/**
 * AdminService.ImportTxtRegistry over Connect's unary protocol (POST, JSON or binary), answered beside
 * Connect in slices.
 *
 * A zone of 50,000 records has 50,000 adoptions: ~5 MB in the binary format, ~10 MB in JSON. Under
 * Connect the handler's answer is encoded in one call (toBinary or toJsonString): even with the list
 * encoded beforehand in slices (api/binary-write.ts), toBinary copies it into one growing buffer, a
 * block of 20–70 ms, and toJson of the list 70–150 ms. This route takes the request shapes it fully
 * understands (api/json-route.ts isUnaryConnect: POST, application/json or application/proto, no
 * compression, no Origin; a timeout header read as Connect reads it) and does what Connect and its
 * interceptors do, in the same order: the body read under Connect's limit and parsed (unknown fields refused: api/strict.ts), the
 * caller authenticated (api/gate.ts), the request checked, the admin scope required; then the import,
 * and its answer written a chunk of adoptions at a time — in JSON as protobuf-es writes it
 * (api/json-write.ts), in the binary format as the pieces toBinary would write one after the other
 * (api/binary-write.ts), sent to the socket as they are (no copy of the whole). Errors are mapped and answered as Connect does
 * (api/errors.ts, api/early-answer.ts). gRPC, gRPC-Web, h2 and browsers' requests go through Connect
 * (api/admin-service.ts), whose answer is the same message.
 */
import type http from 'node:http';
import { create, fromBinary, toJson } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from 'pino';
import * as admin from '../core/admin/index.js';
import type { Adoption, ImportResult } from '../core/admin/import-txt.js';
import type { CoreContext } from '../core/context.js';
import { Slicer } from '../core/slices.js';
import {
  AdminService,
  ImportTxtRegistryRequestSchema as RequestSchema,
  ImportTxtRegistryResponseSchema as ResponseSchema,
  type ImportTxtRegistryRequest,
} from '../gen/dnsplane/v1/admin_pb.js';
import { binaryParts } from './binary-write.js';
import { importInputOf, importResultToPb } from './convert-admin.js';
import { requestTenant } from './gate.js';
import { answerWith, isUnaryConnect, parseJsonRequest, readConnectBody } from './json-route.js';
import { textBytes, withListsParts, writeChunks } from './json-write.js';
import { checkMessage } from './strict.js';

const IMPORT_PATH = `/${AdminService.typeName}/${AdminService.method.importTxtRegistry.name}`;

/** Adoptions converted and encoded between two slice checks. */
const ADOPTIONS_PER_CHUNK = 256;

/** The format of the request this route answers, or undefined when Connect answers it. */
export function importTxtFormat(req: http.IncomingMessage): 'json' | 'proto' | undefined {
  return isUnaryConnect(req, IMPORT_PATH, true);
}

/**
 * A `connect-timeout-ms` header read as Connect reads it, refused as Connect refuses it (before the
 * body is read). Its deadline changes nothing else: under Connect it only aborts the handler's signal,
 * which the import does not watch (a write under the zone lock is not left halfway), and Connect then
 * still answers what the handler returns.
 */
function checkTimeoutHeader(req: http.IncomingMessage): void {
  const raw = req.headers['connect-timeout-ms'];
  const value = Array.isArray(raw) ? raw.join(', ') : raw;
  if (value !== undefined && !/^\d{1,10}$/.test(value)) throw new ConnectError(`protocol error: invalid connect timeout value: ${value}`, Code.InvalidArgument);
}

/** As Connect reads it (api/strict.ts strictJsonOptions for JSON; protobuf-es's binary reader): unknown fields refused by checkMessage after. */
function parseRequest(body: Buffer, format: 'json' | 'proto'): ImportTxtRegistryRequest {
  if (format === 'proto') {
    try {
      return fromBinary(RequestSchema, body);
    } catch (e) {
      throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
    }
  }
  return parseJsonRequest(RequestSchema, body.toString('utf8'));
}

/** The route: answers a request importTxtFormat accepted, errors included. */
export function importTxtRoute(ctx: CoreContext, log: Logger, readMaxBytes: number): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) =>
    answerWith(req, res, log, 'ImportTxtRegistry', async () => {
      const format = importTxtFormat(req)!;
      checkTimeoutHeader(req);
      const request = parseRequest(await readConnectBody(req, readMaxBytes), format);
      const actor = await requestTenant(ctx, req);
      checkMessage(RequestSchema, request as unknown as Parameters<typeof checkMessage>[1], '');
      admin.requireAdmin(actor);
      const r = await admin.importTxtRegistry(ctx, actor, importInputOf(request));
      const slicer = new Slicer();
      const parts = format === 'proto' ? binaryParts(ResponseSchema, await importResultToPb(r, true, slicer)) : [await importAnswerJson(r, slicer)];
      let length = 0;
      for (const p of parts) length += p.length;
      res.writeHead(200, ['content-type', `application/${format}`, 'content-length', String(length)]);
      for (let i = 0; i < parts.length; i++) {
        if (i % 64 === 0) await slicer.check();
        if (res.destroyed) return; // the client went away meanwhile: nothing more to send
        res.write(parts[i]);
      }
      res.end();
      log.debug(
        { rpc: 'ImportTxtRegistry', zone: r.zone, format, adoptions: r.adoptions.length, answerBytes: length, yields: slicer.yields },
        'import answered in slices',
      );
    });
}

/** AdoptionOutcome's JSON names (proto/dnsplane/v1/admin.proto). */
const OUTCOME_JSON: Record<Adoption['outcome'], string> = {
  adopted: 'ADOPTION_OUTCOME_ADOPTED',
  already_owned: 'ADOPTION_OUTCOME_ALREADY_OWNED',
  conflict: 'ADOPTION_OUTCOME_CONFLICT',
  unmapped_owner: 'ADOPTION_OUTCOME_UNMAPPED_OWNER',
  not_allowed: 'ADOPTION_OUTCOME_NOT_ALLOWED',
};

/** An adoption as protobuf-es's JSON writes adoptionToPb's message: fields in field order, empty strings left out. */
function adoptionObject(a: Adoption): Record<string, string> {
  const o: Record<string, string> = {};
  if (a.dnsName !== '') o['dnsName'] = a.dnsName;
  if (a.recordType !== '') o['recordType'] = a.recordType;
  if (a.registryName !== '') o['registryName'] = a.registryName;
  if (a.ownerId !== '') o['ownerId'] = a.ownerId;
  if (a.tenant !== '') o['tenant'] = a.tenant;
  o['outcome'] = OUTCOME_JSON[a.outcome];
  if (a.reason !== '') o['reason'] = a.reason;
  return o;
}

/** The answer as toJsonString writes it, its adoptions and names written in slices. */
export async function importAnswerJson(r: ImportResult, slicer: Slicer): Promise<Buffer> {
  const head = toJson(ResponseSchema, create(ResponseSchema, { zone: r.zone, dryRun: r.dryRun, generation: r.generation })) as Record<string, unknown>;
  const adoptions = await writeChunks(r.adoptions, adoptionObject, slicer, ADOPTIONS_PER_CHUNK);
  const unreadable = await writeChunks(r.unreadable, (name) => name, slicer, ADOPTIONS_PER_CHUNK * 4);
  return textBytes(withListsParts(ResponseSchema, head, { adoptions, unreadable }), slicer);
}
