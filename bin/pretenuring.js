// V8's allocation-site pretenuring, off (unless node was given a pretenuring flag itself): a burst of
// long requests (a bulk apply, a cold sync) made V8 allocate every later request's objects directly
// in the old generation, where polls' garbage is only reclaimed by full collections — not-modified
// polls then cost ~40 % more CPU (bench/README.md, "Pretenuring"). Called by bin/dnsplane.js and
// bin/dnsplane-dev.js before they load the code.
import v8 from 'node:v8';

export function pretenuringOff() {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  if (!given.some((f) => f.includes('pretenuring'))) v8.setFlagsFromString('--no-allocation-site-pretenuring');
}
