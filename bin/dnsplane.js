#!/usr/bin/env node
// The `dnsplane` command, as production runs it (`npm start`, the container image, `npx dnsplane`):
// node on the JavaScript `npm run build` emitted into dist/ — no tsx, esbuild or TypeScript at run
// time. `npm start` builds first; the image is built by the Dockerfile's build stage. Tests, benches
// and development run the TypeScript sources instead, through tsx: bin/dnsplane-dev.js.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { pretenuringOff } from './pretenuring.js';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('dnsplane: dist/ is not built: run `npm run build` (`npm start` builds, then serves)\n');
  process.exit(1);
}
pretenuringOff();
await import(main.href);
