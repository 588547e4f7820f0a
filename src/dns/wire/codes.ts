/**
 * The numbers of the DNS wire format that dnsplane speaks: record types, classes, opcodes, response
 * codes and TSIG's extended errors (RFC 1035, 2136, 3596, 2782, 8659, 6891, 8945, 5936; 1876 LOC, 3403
 * NAPTR, 6672 DNAME, 4255 SSHFP, 6698 TLSA), with their
 * names for logs. Pure data.
 */

/** Record types dnsplane reads or writes on the wire; any other type is carried as raw rdata. */
export const TYPE = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  LOC: 29,
  SRV: 33,
  NAPTR: 35,
  DNAME: 39,
  OPT: 41,
  SSHFP: 44,
  TLSA: 52,
  TSIG: 250,
  IXFR: 251,
  AXFR: 252,
  ANY: 255,
  CAA: 257,
} as const;

export const CLASS = { IN: 1, NONE: 254, ANY: 255 } as const;

export const OPCODE = { QUERY: 0, IQUERY: 1, STATUS: 2, NOTIFY: 4, UPDATE: 5 } as const;

/** RCODEs (4 bits in the header), RFC 1035 and RFC 2136. */
export const RCODE = {
  NOERROR: 0,
  FORMERR: 1,
  SERVFAIL: 2,
  NXDOMAIN: 3,
  NOTIMP: 4,
  REFUSED: 5,
  YXDOMAIN: 6,
  YXRRSET: 7,
  NXRRSET: 8,
  NOTAUTH: 9,
  NOTZONE: 10,
} as const;

/** The errors a TSIG record carries (RFC 8945 §3: its Error field; 0 is NOERROR). */
export const TSIG_ERROR = { NOERROR: 0, BADSIG: 16, BADKEY: 17, BADTIME: 18, BADTRUNC: 22 } as const;

export type RcodeName = keyof typeof RCODE;

const TYPE_NAMES = new Map<number, string>(Object.entries(TYPE).map(([name, n]) => [n, name]));
const CLASS_NAMES = new Map<number, string>(Object.entries(CLASS).map(([name, n]) => [n, name]));
const RCODE_NAMES = new Map<number, string>(
  [...Object.entries(RCODE), ...Object.entries(TSIG_ERROR).filter(([n]) => n !== 'NOERROR')].map(([name, n]) => [n, name]),
);
const OPCODE_NAMES = new Map<number, string>(Object.entries(OPCODE).map(([name, n]) => [n, name]));

/** `TXT`, or `TYPE65280` for a type without a name here (RFC 3597's form). */
export function typeName(type: number): string {
  return TYPE_NAMES.get(type) ?? `TYPE${type}`;
}

/** The number of a type name (`TXT`, `TYPE65280`); undefined for an unknown name. */
export function typeNumber(name: string): number | undefined {
  const upper = name.toUpperCase();
  const known = (TYPE as Record<string, number>)[upper];
  if (known !== undefined) return known;
  const m = /^TYPE(\d{1,5})$/.exec(upper);
  return m && Number(m[1]) <= 0xffff ? Number(m[1]) : undefined;
}

export function className(cls: number): string {
  return CLASS_NAMES.get(cls) ?? `CLASS${cls}`;
}

export function rcodeName(rcode: number): string {
  return RCODE_NAMES.get(rcode) ?? `RCODE${rcode}`;
}

export function opcodeName(opcode: number): string {
  return OPCODE_NAMES.get(opcode) ?? `OPCODE${opcode}`;
}
