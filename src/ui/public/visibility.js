// Where a publish stands on the zone's authoritative servers (a Visibility message in Connect JSON):
// published -> visible, the delay, and per server when it first answered or which names it is behind on.
import { badge, fmtTime, h } from './dom.js';

const STATES = {
  VISIBILITY_STATE_PUBLISHED: 'published',
  VISIBILITY_STATE_VISIBLE: 'visible',
  VISIBILITY_STATE_NOT_VISIBLE: 'not_visible',
  VISIBILITY_STATE_UNVERIFIED: 'unverified',
  VISIBILITY_STATE_SUPERSEDED: 'superseded',
};

/** The state's short name ("visible"), '' when unset. */
export const stateOf = (v) => (v ? (STATES[v.state] ?? '') : '');

const TEXT = { published: 'published', visible: 'visible', not_visible: 'not visible', unverified: 'unverified', superseded: 'superseded' };

/** Milliseconds between two Connect JSON timestamps; undefined when either is unset. */
export function between(from, to) {
  if (!from || !to) return undefined;
  return new Date(to).getTime() - new Date(from).getTime();
}

/** "4.2 s", "2 min 05 s". */
export function delayText(ms) {
  if (ms < 60_000) return `${(Math.max(ms, 0) / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** A publish in a table cell: its state, and once visible the publish-to-visible delay. */
export function visibilityCell(v) {
  const state = stateOf(v);
  if (!state) return '—';
  const delay = state === 'visible' ? between(v.publishedAt, v.visibleAt) : undefined;
  return h(
    'span',
    { 'data-testid': 'visibility', 'data-state': state, title: v.reason ?? '' },
    badge(TEXT[state], state),
    delay === undefined ? '' : ` ${delayText(delay)}`,
  );
}

/** A zone's latest publishes: one chip each, newest first (the delay, or the state when not visible). */
export function recentCell(list) {
  if (!list || list.length === 0) return h('span', { class: 'muted' }, 'none yet');
  return h(
    'div',
    { class: 'delays', 'data-testid': 'recent' },
    list.map((v) => {
      const state = stateOf(v);
      const delay = state === 'visible' ? between(v.publishedAt, v.visibleAt) : undefined;
      return h(
        'span',
        { class: `badge ${state}`, 'data-state': state, title: `apply ${v.journalId}, published ${fmtTime(v.publishedAt)}${v.reason ? `: ${v.reason}` : ''}` },
        delay === undefined ? (TEXT[state] ?? state) : delayText(delay),
      );
    }),
  );
}

/** The detail of a publish: published -> visible, then one row per server. */
export function visibilityDetail(v) {
  const state = stateOf(v);
  if (!state) return null;
  const servers = v.servers ?? [];
  const delay = between(v.publishedAt, v.visibleAt);
  return h(
    'div',
    { 'data-testid': 'visibility-detail' },
    h('h3', null, 'On the authoritative servers'),
    h(
      'p',
      null,
      `Published ${fmtTime(v.publishedAt)} → `,
      badge(TEXT[state], state),
      state === 'visible' ? ` ${fmtTime(v.visibleAt)}, ${delayText(delay ?? 0)} after publishing` : '',
      v.supersededBy ? ` by apply ${v.supersededBy}` : '',
      v.reason ? h('span', { class: 'muted' }, ` — ${v.reason}`) : '',
    ),
    servers.length === 0
      ? null
      : h(
          'table',
          { class: 'servers', 'data-testid': 'servers' },
          h('thead', null, h('tr', null, h('th', null, 'Server'), h('th', null, 'First answered'), h('th', null, 'Delay'), h('th', null, 'Behind on'))),
          h(
            'tbody',
            null,
            servers.map((s) => {
              const d = between(v.publishedAt, s.firstAnsweredAt);
              return h(
                'tr',
                null,
                h('td', { class: 'mono' }, s.server),
                h('td', { class: 'time' }, fmtTime(s.firstAnsweredAt)),
                h('td', { class: 'num' }, d === undefined ? '—' : delayText(d)),
                h('td', { class: 'wrap' }, (s.behind ?? []).join(', ') || (s.error ? '' : '—'), s.error ? h('span', { class: 'error-text' }, s.error) : ''),
              );
            }),
          ),
        ),
  );
}
