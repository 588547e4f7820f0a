// Building DOM nodes. Text always goes in as text nodes (never as HTML), so nothing the API returns
// can become markup.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
}

/** A protobuf Timestamp in Connect JSON (RFC 3339) as "YYYY-MM-DD HH:MM:SSZ"; "—" when unset. */
export function fmtTime(ts) {
  if (!ts) return '—';
  const d = new Date(ts);
  return Number.isNaN(d.getTime())
    ? String(ts)
    : d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');
}

/** "3 min ago" for a timestamp, for titles and hints. */
export function ago(ts) {
  if (!ts) return '';
  const s = Math.round((Date.now() - new Date(ts).getTime()) / 1000);
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function badge(text, kind) {
  return h('span', { class: `badge ${kind ?? text}` }, text);
}

/**
 * An error box for a failed API call; a PermissionDenied on an admin page says why. A write's refusal
 * (write.js: `page` false) is shown as it came, code and message: there PermissionDenied is the rule
 * the write broke (a handover's heir without the grants), not the page's admin scope.
 */
export function errorBox(e, page = true) {
  const code = e?.code ? e.code : 'error';
  const msg = e instanceof Error ? e.message : String(e);
  if (code === 'permission_denied' && page) {
    return h(
      'div',
      { class: 'error', 'data-testid': 'refused' },
      h('strong', null, 'Not allowed. '),
      'This page needs a token with the admin scope. The server answered: ',
      h('code', null, msg),
    );
  }
  return h('div', { class: 'error', 'data-testid': 'error' }, h('strong', null, `${code}: `), msg);
}

/** The types whose targets are text (OVH's SPF, DKIM and DMARC are TXT records): shown quoted. */
export const TEXT_TYPES = ['TXT', 'SPF', 'DKIM', 'DMARC'];

export function targetText(e) {
  const targets = e.targets ?? [];
  return (TEXT_TYPES.includes(e.recordType) ? targets.map((t) => JSON.stringify(t)) : targets).join(', ');
}
