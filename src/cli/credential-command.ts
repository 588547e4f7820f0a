/**
 * The skeleton `dnsplane tenant tsig` and `dnsplane tenant ovh-key` share: create|list|rotate|delete
 * parsed alike, run in the database directly (beside a running serve through its connection file),
 * sealing under DNSPLANE_SECRETS_KEY (demo mode: the key in its data dir); a kind says only what
 * differs — its options, where clients reach the door (for the configuration printed beside a new
 * secret), its table columns and how it prints what it issued.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type pg from 'pg';
import { parseDuration } from '../config.js';
import type { SecretBox } from '../core/credentials/secrets.js';
import { secretBoxFor } from '../demo.js';
import { InvalidInputError } from '../dns/errors.js';
import { configFrom, type CliIo } from './command.js';
import { withDatabase } from './migrate.js';
import { table } from './text.js';

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** What a kind of credential differs in. `K`: a key as listed; `I`: one just issued; `W`: where clients reach the door. */
export interface CredentialKind<K extends { tenant: string }, I, W> {
  /** The subcommand of `dnsplane tenant` ("tsig"), and a key in messages ("TSIG key"). */
  command: string;
  what: string;
  /** The positional rotate and delete take ("NAME"). */
  nameArg: string;
  /** create's options beyond --json and the door flag. */
  createOptions: Options;
  /** The flag that says where clients reach the door ("server"), and what it says else. */
  doorFlag: string;
  door(flag: string | undefined, io: CliIo): W;
  create(pool: pg.Pool, secrets: SecretBox | undefined, tenant: string, values: Values): Promise<I>;
  list(pool: pg.Pool, tenant: string): Promise<K[]>;
  rotate(pool: pg.Pool, secrets: SecretBox | undefined, name: string, graceMs: number): Promise<I>;
  remove(pool: pg.Pool, name: string): Promise<K>;
  /** The listing's header and a key's row. */
  header: string[];
  row(k: K): string[];
  /** How a key is named in "deleted …" (`"name."`, an application key). */
  label(k: K): string;
  printIssued(io: CliIo, issued: I, door: W, json: boolean, verb: 'created' | 'rotated'): void;
}

/** A time for a listing's cell; `none` when there is none. */
export function when(d: Date | null, none = '-'): string {
  return d?.toISOString() ?? none;
}

/** A key as JSON: its fields, times as ISO strings. */
export function keyJson(k: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(k).map(([f, v]) => [f, v instanceof Date ? v.toISOString() : v]));
}

export async function runCredential<K extends { tenant: string }, I, W>(
  kind: CredentialKind<K, I, W>,
  sub: string | undefined,
  rest: string[],
  io: CliIo,
): Promise<number> {
  const parse = (options: Options): { values: Values; positionals: string[] } =>
    parseArgs({ args: rest, options: { ...options, json: { type: 'boolean' } }, allowPositionals: true, strict: true });
  const one = (positionals: string[], what: string): string => {
    if (positionals.length !== 1) throw new InvalidInputError(what, `exactly one ${what} is required (dnsplane tenant ${kind.command} --help)`);
    return positionals[0]!;
  };
  switch (sub) {
    case 'create':
    case 'rotate': {
      const { values, positionals } = parse(
        sub === 'create' ? { ...kind.createOptions, [kind.doorFlag]: { type: 'string' } } : { grace: { type: 'string' }, [kind.doorFlag]: { type: 'string' } },
      );
      const name = one(positionals, sub === 'create' ? 'TENANT' : kind.nameArg);
      const graceMs = typeof values.grace === 'string' ? parseDuration(values.grace, '--grace') : 0;
      const door = kind.door(values[kind.doorFlag] as string | undefined, io);
      return withDatabase(io, async (db) => {
        const secrets = await secretBoxFor(configFrom(io));
        const issued = sub === 'create' ? await kind.create(db.pool, secrets, name, values) : await kind.rotate(db.pool, secrets, name, graceMs);
        kind.printIssued(io, issued, door, values.json === true, sub === 'create' ? 'created' : 'rotated');
        return 0;
      });
    }
    case 'list': {
      const { values, positionals } = parse({});
      if (positionals.length > 1) throw new InvalidInputError('arguments', `unexpected "${positionals[1]}": at most one TENANT`);
      return withDatabase(io, async (db) => {
        const keys = await kind.list(db.pool, positionals[0] ?? '');
        if (values.json) io.out(JSON.stringify(keys.map(keyJson), null, 2));
        else if (keys.length === 0)
          io.out(
            positionals[0] ? `tenant "${positionals[0]}" has no ${kind.what} (dnsplane tenant ${kind.command} create ${positionals[0]})` : `no ${kind.what}`,
          );
        else for (const line of table([kind.header, ...keys.map(kind.row)])) io.out(line);
        return 0;
      });
    }
    case 'delete': {
      const { values, positionals } = parse({});
      const name = one(positionals, kind.nameArg);
      return withDatabase(io, async (db) => {
        const key = await kind.remove(db.pool, name);
        if (values.json) io.out(JSON.stringify({ deleted: keyJson(key) }, null, 2));
        else io.out(`deleted ${kind.what} ${kind.label(key)} of tenant "${key.tenant}"; it no longer works`);
        return 0;
      });
    }
    default:
      throw new InvalidInputError(
        `tenant ${kind.command}`,
        `unknown subcommand "${sub ?? ''}"; use create, list, rotate or delete (dnsplane tenant ${kind.command} --help)`,
      );
  }
}
