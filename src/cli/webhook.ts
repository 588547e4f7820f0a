import { parseArgs } from 'node:util';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { parseListen } from '../config/config.js';
import { InvalidInputError } from '../dns/errors.js';
import { ZoneService } from '../gen/dnsplane/v1/zone_pb.js';
import { createLogger } from '../server/server.js';
import { logFormatOf, parseLogFormat } from '../config/config.js';
import { startSidecar } from '../webhook/index.js';
import { bearerInterceptor, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import { readFileFlag, type Command } from './command.js';

const HELP = `Usage: dnsplane webhook [--listen HOST:PORT] --server URL (--token-file FILE | DNSPLANE_TOKEN)
                        [--ca-file FILE] [--cert-file FILE --key-file FILE]

The external-dns webhook provider as a sidecar: runs in external-dns's pod, listens on localhost for
it (--provider=webhook --webhook-provider-url=http://localhost:8888), and calls the central dnsplane
over Connect with the tenant's token. No OVH credentials, no password in a URL. Best with no secret
at all: --token-file naming a projected ServiceAccount token (audience dnsplane) whose subject the
tenant trusts (dnsplane tenant trust); the file is read again for every call, so the kubelet's
rotation just works. GET /healthz answers "ok"; GET /metrics serves the sidecar's own series.

  --listen HOST:PORT    where external-dns reaches it (or DNSPLANE_WEBHOOK_LISTEN) [127.0.0.1:8888]
${SERVER_OPTIONS_HELP}
  --ca-file FILE        CA (PEM) to trust for an https --server, instead of the system ones
  --cert-file FILE      client certificate (PEM) for mutual TLS to the centre; with --key-file
  --key-file FILE       its private key (PEM)

SIGTERM or SIGINT: in-flight requests finish, then it exits.`;

export const webhookCommand: Command = {
  summary: 'the external-dns webhook provider as a sidecar, calling a central dnsplane',
  help: HELP,
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        listen: { type: 'string' },
        server: { type: 'string' },
        'token-file': { type: 'string' },
        'ca-file': { type: 'string' },
        'cert-file': { type: 'string' },
        'key-file': { type: 'string' },
      },
      strict: true,
    });
    const listenRaw = values.listen ?? io.env['DNSPLANE_WEBHOOK_LISTEN']?.trim() ?? '127.0.0.1:8888';
    const listen = parseListen(listenRaw, values.listen !== undefined ? '--listen' : 'DNSPLANE_WEBHOOK_LISTEN');
    const { baseUrl, tokenSource } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    if ((values['cert-file'] === undefined) !== (values['key-file'] === undefined)) {
      throw new InvalidInputError(values['cert-file'] === undefined ? '--cert-file' : '--key-file', '--cert-file and --key-file go together');
    }
    const tls = {
      ca: readFileFlag(values['ca-file'], '--ca-file'),
      cert: readFileFlag(values['cert-file'], '--cert-file'),
      key: readFileFlag(values['key-file'], '--key-file'),
    };
    // The token file is read again for every call to the centre: the kubelet rotates a projected token in place.
    const transport = createConnectTransport({
      baseUrl,
      httpVersion: '1.1',
      interceptors: [bearerInterceptor(tokenSource)],
      nodeOptions: Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined)),
    });
    const log = createLogger(io.env['DNSPLANE_LOG_LEVEL']?.trim() || 'info', logFormatOf(parseLogFormat(io.env['DNSPLANE_LOG_FORMAT']), io.isTty));
    const sidecar = await startSidecar({ client: createClient(ZoneService, transport), listen, log });
    log.info({ listen: sidecar.url, server: baseUrl }, 'webhook sidecar ready');
    io.out(`dnsplane webhook sidecar listening on ${sidecar.url}, calling ${baseUrl}`);
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
    await sidecar.close();
    return 0;
  },
};
