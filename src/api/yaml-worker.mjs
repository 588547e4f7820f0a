// The worker behind api/yaml-off-thread.ts: parses YAML documents off the API's event loop. Plain
// JavaScript (no TypeScript loader in workers); it imports only the `yaml` package.
//
// In:  { id, text, maxItems }
// Out: { id, doc }            the parsed document (plain data: YAML 1.2 core schema)
//      { id, tooMany: n }     the document's endpoint list has n > maxItems entries (not sent back)
//      { id, error: message } not YAML
import { parentPort } from 'node:worker_threads';
import { parse } from 'yaml';

parentPort.on('message', ({ id, text, maxItems }) => {
  let doc;
  try {
    doc = parse(text);
  } catch (e) {
    parentPort.postMessage({ id, error: String(e?.message || e) });
    return;
  }
  const list = Array.isArray(doc) ? doc : doc !== null && typeof doc === 'object' && Array.isArray(doc.endpoints) ? doc.endpoints : undefined;
  if (list !== undefined && list.length > maxItems) parentPort.postMessage({ id, tooMany: list.length });
  else parentPort.postMessage({ id, doc });
});
