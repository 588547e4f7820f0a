/**
 * DNSPLANE_LOG_FORMAT (issue 31.8): JSON lines for collectors, human lines on a terminal (auto), and
 * redaction in both. The format is chosen from the setting and whether stdout is a terminal.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { loadConfig, logFormatOf, parseLogFormat } from '../../src/config/config.js';
import { createLogger } from '../../src/server/server.js';

function sink(): Writable & { text(): string } {
  const chunks: string[] = [];
  const w = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as Writable & { text(): string };
  w.text = () => chunks.join('');
  return w;
}

describe('DNSPLANE_LOG_FORMAT', () => {
  it('auto is pretty on a terminal and json otherwise; json and pretty are what they say', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect([logFormatOf('auto', true), logFormatOf('auto', false), logFormatOf('json', true), logFormatOf('pretty', false)]).toEqual([
      'pretty',
      'json',
      'json',
      'pretty',
    ]);
    expect(parseLogFormat(' JSON ')).toBe('json');
    expect(() => loadConfig({ DNSPLANE_LOG_FORMAT: 'xml' })).toThrow('DNSPLANE_LOG_FORMAT: must be json, pretty or auto, got "xml"');
  });

  it('pretty writes one human line per entry, with its fields, and redacts as json does', () => {
    const out = sink();
    const log = createLogger('info', 'pretty', out);
    log.info({ zone: 'example.com', token: 'tok_secret_value' }, 'zone synced');
    log.debug('not at this level');
    const lines = out.text().trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: zone synced \{"zone":"example\.com","token":"\[redacted\]"\}$/);
    expect(out.text()).not.toContain('tok_secret_value');
    const json = sink();
    createLogger('info', 'json', json).info({ token: 'tok_secret_value' }, 'zone synced');
    expect(JSON.parse(json.text())).toMatchObject({ level: 30, msg: 'zone synced', token: '[redacted]', service: 'dnsplane' });
  });
});
