/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha): lets grpcurl, `buf curl`, Postman and
 * other tools list the services and fetch their schemas from the server, without the .proto files.
 *
 * The descriptors come from the generated code (each DescService knows its DescFile, which knows its
 * dependencies), so whatever the server registers is what reflection describes; nothing is kept by
 * hand. Both versions speak the same messages under two package names; grpcurl asks v1alpha, `buf
 * curl` asks v1 first.
 */
import { create, toBinary, type DescFile, type DescMessage, type DescService } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, type ConnectRouter } from '@connectrpc/connect';
import * as v1 from '../gen/grpc/reflection/v1/reflection_pb.js';
import * as v1alpha from '../gen/grpc/reflection/v1alpha/reflection_pb.js';

/** A reflection request as both versions spell it. */
interface Request {
  host: string;
  messageRequest:
    | { case: 'fileByFilename' | 'fileContainingSymbol' | 'allExtensionNumbersOfType' | 'listServices'; value: string }
    | { case: 'fileContainingExtension'; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** The answer's oneof, as both versions spell it (nested messages as plain init objects). */
type Answer =
  | { case: 'fileDescriptorResponse'; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: 'allExtensionNumbersResponse'; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: 'listServicesResponse'; value: { service: Array<{ name: string }> } }
  | { case: 'errorResponse'; value: { errorCode: number; errorMessage: string } };

/** Every file, symbol and extension reachable from a set of services. */
export class DescriptorIndex {
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly messages = new Map<string, DescMessage>();
  /** extendee type name -> extension number -> file */
  private readonly extensions = new Map<string, Map<number, DescFile>>();
  readonly serviceNames: string[];

  constructor(services: DescService[]) {
    this.serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
    for (const s of services) this.addFile(s.file);
  }

  /** The file named (e.g. "dnsplane/v1/zone.proto"). */
  fileByName(name: string): DescFile | undefined {
    return this.files.get(name);
  }

  /** The file defining a fully qualified symbol: service, method, message, field, oneof, enum, enum value, extension. */
  fileBySymbol(symbol: string): DescFile | undefined {
    return this.symbols.get(symbol.replace(/^\./, ''));
  }

  fileByExtension(containingType: string, number: number): DescFile | undefined {
    return this.extensions.get(containingType.replace(/^\./, ''))?.get(number);
  }

  /** Extension numbers known for a message type; undefined when the type is unknown. */
  extensionNumbers(typeName: string): number[] | undefined {
    const name = typeName.replace(/^\./, '');
    if (!this.messages.has(name)) return undefined;
    return [...(this.extensions.get(name)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /** A file and its transitive dependencies, the file first, each once. */
  withDependencies(file: DescFile): DescFile[] {
    const out: DescFile[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile) => {
      if (seen.has(f.proto.name)) return;
      seen.add(f.proto.name);
      out.push(f);
      f.dependencies.forEach(visit);
    };
    visit(file);
    return out;
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    const sym = (name: string) => this.symbols.set(name, file);
    const pkg = file.proto.package;
    if (pkg) sym(pkg);
    const addEnum = (e: DescFile['enums'][number]) => {
      sym(e.typeName);
      const scope = e.typeName.includes('.') ? e.typeName.slice(0, e.typeName.lastIndexOf('.') + 1) : '';
      for (const v of e.values) sym(scope + v.name);
    };
    const addExtension = (x: DescFile['extensions'][number]) => {
      sym(x.typeName);
      let byNumber = this.extensions.get(x.extendee.typeName);
      if (!byNumber) this.extensions.set(x.extendee.typeName, (byNumber = new Map()));
      byNumber.set(x.number, file);
    };
    const addMessage = (m: DescMessage) => {
      sym(m.typeName);
      this.messages.set(m.typeName, m);
      for (const f of m.fields) sym(`${m.typeName}.${f.name}`);
      for (const o of m.oneofs) sym(`${m.typeName}.${o.name}`);
      m.nestedMessages.forEach(addMessage);
      m.nestedEnums.forEach(addEnum);
      m.nestedExtensions.forEach(addExtension);
    };
    file.messages.forEach(addMessage);
    file.enums.forEach(addEnum);
    file.extensions.forEach(addExtension);
    for (const s of file.services) {
      sym(s.typeName);
      for (const m of s.methods) sym(`${s.typeName}.${m.name}`);
    }
    for (const d of file.dependencies) this.addFile(d);
  }
}

const notFound = (errorMessage: string): Answer => ({ case: 'errorResponse', value: { errorCode: Code.NotFound, errorMessage } });

/**
 * One reflection session (one stream): a file already sent on it is not sent again, as the protocol
 * allows, so a client walking a schema gets each file once.
 */
function session(index: DescriptorIndex): (req: Request) => Answer {
  const sent = new Set<string>();
  const files = (file: DescFile): Answer => {
    const out = index.withDependencies(file).filter((f, i) => i === 0 || !sent.has(f.proto.name));
    for (const f of out) sent.add(f.proto.name);
    return { case: 'fileDescriptorResponse', value: { fileDescriptorProto: out.map((f) => toBinary(FileDescriptorProtoSchema, f.proto)) } };
  };
  return (req) => {
    const r = req.messageRequest;
    switch (r.case) {
      case 'listServices':
        return { case: 'listServicesResponse', value: { service: index.serviceNames.map((name) => ({ name })) } };
      case 'fileByFilename': {
        const f = index.fileByName(r.value);
        return f ? files(f) : notFound(`file not found: "${r.value}"`);
      }
      case 'fileContainingSymbol': {
        const f = index.fileBySymbol(r.value);
        return f ? files(f) : notFound(`symbol not found: "${r.value}"`);
      }
      case 'fileContainingExtension': {
        const f = index.fileByExtension(r.value.containingType, r.value.extensionNumber);
        return f ? files(f) : notFound(`extension not found: ${r.value.extensionNumber} of "${r.value.containingType}"`);
      }
      case 'allExtensionNumbersOfType': {
        const numbers = index.extensionNumbers(r.value);
        return numbers
          ? { case: 'allExtensionNumbersResponse', value: { baseTypeName: r.value.replace(/^\./, ''), extensionNumber: numbers } }
          : notFound(`type not found: "${r.value}"`);
      }
      default:
        return {
          case: 'errorResponse',
          value: {
            errorCode: Code.InvalidArgument,
            errorMessage:
              'message_request: one of list_services, file_by_filename, file_containing_symbol, file_containing_extension or all_extension_numbers_of_type is required',
          },
        };
    }
  };
}

/**
 * Registers grpc.reflection.v1 and v1alpha. `services` is asked at the first request, so it can list
 * every service the server ended up registering (these two included).
 */
export function registerReflection(router: ConnectRouter, services: () => DescService[]): void {
  let index: DescriptorIndex | undefined;
  const getIndex = () => (index ??= new DescriptorIndex(services()));
  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const answer = session(getIndex());
      for await (const req of requests) {
        yield create(v1.ServerReflectionResponseSchema, { validHost: req.host, originalRequest: req, messageResponse: answer(req) });
      }
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const answer = session(getIndex());
      for await (const req of requests) {
        yield create(v1alpha.ServerReflectionResponseSchema, { validHost: req.host, originalRequest: req, messageResponse: answer(req) });
      }
    },
  });
}
