#!/usr/bin/env node
// The `dnsplane` command on the TypeScript sources, through tsx (a dev dependency): what the tests,
// the benches and development run, with no build step and never a stale dist/. Production runs
// bin/dnsplane.js, node on the compiled dist/.
import { register } from 'tsx/esm/api';
import { pretenuringOff } from './pretenuring.js';

pretenuringOff();
register();
await import('../src/cli/main.ts');
