#!/usr/bin/env node
// The `dnsplane` command: runs the TypeScript sources through tsx, so a clone works right after
// `npm install` with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
