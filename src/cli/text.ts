/**
 * Small pieces of the text `dnsplane` commands print: a table's aligned columns (the tenant and key
 * listings), and for the configurations printed beside a new credential (cli/tsig-config.ts,
 * cli/ovh-key-config.ts) a Kubernetes object name made from a key's name and a value quoted for a
 * shell line.
 */

/** Rows as aligned columns (two spaces between), the last column left ragged. */
export function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}
