// The second half of `npm run build` (after tsc emitted src/**/*.ts into dist/): every file of src/ that
// is not TypeScript — the console (src/ui/public/), the worker and the module hook the code loads by a
// path relative to its own file (src/api/yaml-worker.mjs, src/store/embedded/binaries-hook.mjs) — is
// copied to the same place under dist/, and whatever dist/ holds that src/ no longer has a source for
// (a file moved or removed since the last build) is deleted, so dist/ is exactly what src/ compiles to.
// migrations/ and package.json are read where they are (../../ of dist/store/, as of src/store/).
// `node scripts/dist-assets.mjs DIR` does it for an output directory other than dist/ (the tests).
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = path.join(ROOT, 'src');
const DIST = process.argv[2] ? path.resolve(process.argv[2]) : path.join(ROOT, 'dist');

/** Files under dir, as paths relative to it with '/' separators. */
function files(dir, rel = '') {
  const out = [];
  for (const entry of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel === '' ? entry.name : `${rel}/${entry.name}`;
    if (entry.isDirectory()) out.push(...files(dir, r));
    else out.push(r);
  }
  return out;
}

const sources = new Set(files(SRC));
let copied = 0;
for (const rel of sources) {
  if (rel.endsWith('.ts')) continue;
  const to = path.join(DIST, rel);
  const from = path.join(SRC, rel);
  let same = false;
  try {
    same = statSync(to).size === statSync(from).size && readFileSync(to).equals(readFileSync(from));
  } catch {}
  if (same) continue;
  mkdirSync(path.dirname(to), { recursive: true });
  copyFileSync(from, to);
  copied++;
}

/** Whether dist/rel has a source: the file itself (an asset) or the TypeScript that emits it. */
function hasSource(rel) {
  if (rel === '.tsbuildinfo' || sources.has(rel)) return true;
  return rel.endsWith('.js') && sources.has(`${rel.slice(0, -3)}.ts`);
}

let removed = 0;
for (const rel of files(DIST)) {
  if (hasSource(rel)) continue;
  unlinkSync(path.join(DIST, rel));
  removed++;
}
/** Removes the directories under dir left empty; whether dir itself is empty now. */
function prune(dir) {
  let empty = true;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory() && prune(path.join(dir, entry.name))) rmdirSync(path.join(dir, entry.name));
    else empty = false;
  }
  return empty;
}
prune(DIST);
console.log(`${path.relative(process.cwd(), DIST) || '.'}/: ${copied} asset(s) copied, ${removed} stale file(s) removed`);
