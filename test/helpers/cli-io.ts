/**
 * A CliIo that keeps what a command prints (`ERR ` before what it writes to stderr), for the tests
 * that run `dnsplane` commands in-process, and the `--json` answer of one as a value.
 */
import { expect } from 'vitest';
import type { CliIo, Command } from '../../src/cli/command.js';

export interface CapturedIo extends CliIo {
  lines: string[];
  text(): string;
}

export function capturedIo(env: Record<string, string | undefined>): CapturedIo {
  const lines: string[] = [];
  return {
    lines,
    text: () => lines.join('\n'),
    out: (l = '') => void lines.push(l),
    err: (l) => void lines.push(`ERR ${l}`),
    env,
    isTty: false,
  };
}

/** Runs `command args… --json` (it must exit 0) and parses what it printed. */
export async function commandJson(command: Command, args: string[], io: CapturedIo): Promise<any> {
  expect(await command.run([...args, '--json'], io)).toBe(0);
  return JSON.parse(io.text());
}
