/**
 * The generated code under src/gen must be what `npm run generate` produces from proto/.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';

function files(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? files(path.join(dir, d.name), base) : [path.relative(base, path.join(dir, d.name))],
  );
}

it('src/gen is up to date with proto/ (run npm run generate)', () => {
  const out = mkdtempSync(path.join(tmpdir(), 'dnsplane-gen-'));
  try {
    execFileSync(path.resolve('node_modules/.bin/buf'), ['generate', '--output', out], { stdio: 'pipe' });
    const fresh = path.join(out, 'src/gen');
    expect(files(fresh).sort()).toEqual(files('src/gen').sort());
    for (const f of files(fresh)) {
      expect(readFileSync(path.join('src/gen', f), 'utf8'), `src/gen/${f} is stale`).toBe(readFileSync(path.join(fresh, f), 'utf8'));
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
