// What the writes that issue a token or a secret share (tenant-writes.js, key-writes.js): the graces
// a rotation may give the old one, how the confirm step words a grace, and the note under a token or
// secret that is shown once.
import { h } from '../dom.js';

/** The graces a rotation may give the old token (or old secret): seconds, text. */
export const gracesFor = (what) => [
  ['0', `none — the old ${what} stops at once`],
  ['600', '10 min'],
  ['3600', '1 h'],
  ['86400', '1 day'],
];
/** How the confirm step words what a grace of `s` seconds leaves the old token or secret. */
export const graceText = (s) => (s === 0 ? 'stops working at once' : `stays valid for ${s >= 3600 ? `${s / 3600} h` : `${s / 60} min`} more, then stops`);

/** The note under a token or secret shown once (`what`: which). */
export const onceNote = (what) =>
  h(
    'p',
    { class: 'once' },
    h('strong', null, 'Shown once. '),
    `Copy ${what} now: dnsplane does not keep it readable and will not show it again; closing this box forgets it.`,
  );
