/**
 * Large answers in the binary format (binary Connect, gRPC, gRPC-Web), their long lists encoded in
 * slices (core/slices.ts). Connect encodes a handler's answer in one go (toBinary): the 50,000
 * adoptions of a TXT-registry import are ~5 MB, one block of 100–300 ms, and building their 50,000
 * messages first is another.
 *
 * protobuf-es writes a message's unknown fields as they are (api/records-binary.ts answers Records the
 * same way): here the items of a repeated field are converted and encoded a chunk at a time, each
 * chunk kept as one unknown field of that number, and the toBinary Connect calls copies the bytes
 * out. A chunk encoded alone is its items one after the other, each its tag, length and bytes; kept
 * without its first tag (toBinary writes the unknown field's tag before its data) it is exactly the
 * items as toBinary of the whole list writes them. Readers parse the same message: only the place of
 * the list on the wire moves (after the fields of the head), and a repeated field's items may come
 * anywhere, in their order. The JSON form has no unknown fields: a handler answering in JSON
 * (answersInBinary false) sets the list itself.
 */
import { create, ScalarType, toBinary, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import type { Slicer } from '../core/slices.js';

/** Items converted and encoded between two slice checks. */
const ITEMS_PER_CHUNK = 256;

/**
 * `head` with `items` (converted by `toPb`) as the repeated field `field`, encoded in slices and kept
 * as unknown fields: what toBinary then writes is the message with the list set. `field` is a list of
 * messages, strings or bytes (the length-delimited items that are never packed).
 */
export async function withListEncoded<Desc extends DescMessage, T>(
  schema: Desc,
  head: MessageShape<Desc>,
  field: DescField,
  items: readonly T[],
  toPb: (item: T) => unknown,
  slicer: Slicer,
  perChunk = ITEMS_PER_CHUNK,
): Promise<MessageShape<Desc>> {
  if (!isLengthDelimitedList(field)) {
    throw new TypeError(`${schema.typeName}.${field.name}: not a list of length-delimited items`);
  }
  const tag = new BinaryWriter().tag(field.number, WireType.LengthDelimited).finish();
  const unknown = [...(head.$unknown ?? [])];
  for (let i = 0; i < items.length; i += perChunk) {
    await slicer.check();
    const chunk = create(schema, { [field.localName]: items.slice(i, i + perChunk).map(toPb) } as never);
    const bytes = toBinary(schema, chunk);
    unknown.push({ no: field.number, wireType: WireType.LengthDelimited, data: bytes.subarray(tag.length) });
  }
  return Object.assign(head, { $unknown: unknown });
}

/**
 * What toBinary writes of `message`, as pieces to be sent one after the other: the message without its
 * unknown fields, then each unknown field's tag and data — the same bytes, never copied into one buffer.
 */
export function binaryParts<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Uint8Array[] {
  const parts: Uint8Array[] = [toBinary(schema, message, { writeUnknownFields: false })];
  for (const u of message.$unknown ?? []) parts.push(new BinaryWriter().tag(u.no, u.wireType).finish(), u.data);
  return parts;
}

function isLengthDelimitedList(field: DescField): boolean {
  if (field.fieldKind !== 'list') return false;
  if (field.listKind === 'message') return !field.delimitedEncoding;
  return field.listKind === 'scalar' && (field.scalar === ScalarType.STRING || field.scalar === ScalarType.BYTES);
}
