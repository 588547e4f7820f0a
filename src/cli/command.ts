/**
 * What a `dnsplane` command is. Each command lives in its own file under src/cli/ and is listed in
 * main.ts's COMMANDS; main.ts handles help, errors and exit codes.
 */
import { readFileSync } from 'node:fs';
import { loadConfig, type Config } from '../config/config.js';
import { InvalidInputError } from '../dns/errors.js';

export interface Command {
  /** One line for `dnsplane --help`. */
  summary: string;
  /** The full text for `dnsplane help NAME` and `dnsplane NAME --help`. */
  help: string;
  /** The help for these arguments, when a subcommand has its own (`dnsplane tenant tsig --help`). */
  helpFor?(args: string[]): string;
  /** Returns the exit code. Throw InvalidInputError for bad arguments (exit 1 with its message). */
  run(args: string[], io: CliIo): Promise<number>;
}

export interface CliIo {
  out(line?: string): void;
  err(line: string): void;
  env: Record<string, string | undefined>;
  /** Whether stdout is a terminal (colours only then). */
  isTty: boolean;
  /** All of standard input, for a flag given "-" (account credentials); absent: none. */
  stdin?: () => Promise<string>;
}

/** The configuration from the environment, with command-line overrides. */
export function configFrom(io: CliIo, overrides: Record<string, string | undefined> = {}): Config {
  const set = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  return loadConfig({ ...io.env, ...set });
}

/** json from `--output json` or `--json`. */
export function outputOf(values: { output?: string; json?: boolean }): 'text' | 'json' {
  const output = values.json ? 'json' : (values.output ?? 'text');
  if (output !== 'text' && output !== 'json') throw new InvalidInputError('--output', `must be text or json, got "${output}"`);
  if (values.json && values.output !== undefined && values.output !== 'json') throw new InvalidInputError('--json', `contradicts --output ${values.output}`);
  return output;
}

/** The text of the file a flag names (undefined when the flag was not given); InvalidInput on the flag when it cannot be read. */
export function readFileFlag(file: string | undefined, flag: string): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new InvalidInputError(flag, `cannot read "${file}": ${(e as Error).message}`);
  }
}
