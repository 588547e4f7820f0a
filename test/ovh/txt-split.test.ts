/**
 * TXT values over 255 characters as OVH answers them: split into pieces of 255, each quoted, the
 * quotes inside NOT escaped. They must read back as the value that was written, or the next plan
 * updates them again (end to end: test/e2e/record-types.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { canonicalTarget } from '../../src/dns/index.js';
import { joinOvhSplitTxt, ovhTargetToCanonical, recordsToEndpoints } from '../../src/ovh/mapping.js';
import { buildOperations } from '../../src/ovh/ops.js';

/** What OVH answers for a stored TXT value. */
function ovhAnswer(stored: string): string {
  const pieces: string[] = [];
  for (let i = 0; i < stored.length || i === 0; i += 255) pieces.push(stored.slice(i, i + 255));
  return `"${pieces.join('" "')}"`;
}

const WITH_QUOTES = `${'a'.repeat(250)}"x" "${'b'.repeat(300)} "c" ${'d'.repeat(10)}`;

describe('joinOvhSplitTxt', () => {
  it('joins the pieces as they are, quotes inside included', () => {
    expect(joinOvhSplitTxt(ovhAnswer(WITH_QUOTES))).toBe(WITH_QUOTES);
    expect(joinOvhSplitTxt(ovhAnswer('e'.repeat(510)))).toBe('e'.repeat(510));
    expect(joinOvhSplitTxt(ovhAnswer('f'.repeat(256)))).toBe('f'.repeat(256));
  });

  it('leaves every other shape to decodeTxt: one piece, pieces of other lengths, no quotes', () => {
    expect(joinOvhSplitTxt(ovhAnswer('short "one"'))).toBeUndefined();
    expect(joinOvhSplitTxt(ovhAnswer('g'.repeat(255)))).toBeUndefined();
    expect(joinOvhSplitTxt(`"${'h'.repeat(100)}" "${'i'.repeat(300)}"`)).toBeUndefined();
    expect(joinOvhSplitTxt('j'.repeat(600))).toBeUndefined();
  });
});

describe('reading long TXT answers', () => {
  it('a value with quotes inside reads back as written, and as its own canonical form', () => {
    const canonical = canonicalTarget('TXT', WITH_QUOTES, 't');
    expect(canonical).toBe(WITH_QUOTES);
    expect(ovhTargetToCanonical('TXT', ovhAnswer(WITH_QUOTES), 'example.com')).toBe(canonical);
    const { endpoints, warnings } = recordsToEndpoints(
      [{ id: '5000000001', zone: 'example.com', subDomain: 'k', fieldType: 'TXT', target: ovhAnswer(WITH_QUOTES), ttl: 0 }],
      'example.com',
    );
    expect(endpoints[0]!.targets).toEqual([WITH_QUOTES]);
    expect(warnings).toEqual([]);
  });

  it('a value whose own quotes fall where a split could be is not mistaken for more pieces', () => {
    // As presentation form this answer would read as three strings, losing the value's own `" "`.
    const tricky = `${'a'.repeat(100)}" "${'b'.repeat(300)}`;
    expect(ovhAnswer(tricky)).toBe(`"${'a'.repeat(100)}" "${'b'.repeat(152)}" "${'b'.repeat(148)}"`);
    expect(ovhTargetToCanonical('TXT', ovhAnswer(tricky), 'example.com')).toBe(tricky);
  });

  it('the same value planned again against what OVH answers is no operation', () => {
    const record = { id: '5000000001', zone: 'example.com', subDomain: 'k', fieldType: 'TXT', target: ovhAnswer(WITH_QUOTES), ttl: 300 };
    const set = { dnsName: 'k.example.com', recordType: 'TXT' as const, targets: [WITH_QUOTES], ttl: 300 };
    expect(buildOperations('example.com', { action: 'update', before: set, after: set }, [record])).toEqual([]);
  });

  it('well-formed presentation form keeps its meaning: escapes and pieces of any length', () => {
    expect(ovhTargetToCanonical('TXT', '"say \\"hi\\"" "there"', 'example.com')).toBe('say "hi"there');
    expect(ovhTargetToCanonical('TXT', ovhAnswer('k'.repeat(400)), 'example.com')).toBe('k'.repeat(400));
  });
});
