// Every write the console makes goes through one dialog, drawn in the page (never window.confirm):
// an optional form, then a confirm step that says in words what the call will do and shows the exact
// AdminService request, then the answer — the RPC's error (its code and message, which name the field
// and the rule) when refused, or the result, after which the page's view is refreshed. Cancel (or
// Escape) at any step before the confirm writes nothing.
//
// A secret in a result (a token, a TSIG secret, an OVH key) lives only in this dialog's DOM: never in
// a URL, a cookie, storage or a log line; closing the dialog removes it.
import { adminApi } from './api.js';
import { clear, errorBox, h } from './dom.js';

/**
 * Opens the dialog inside `host` (the page's section: navigating away removes it).
 * spec: {
 *   title, testid,
 *   fields?: Node[]            — the form's inputs (labels included); none: straight to the confirm step
 *   read?: () => request       — the request from the fields; throw Error(message) for input the page can judge.
 *                                With fields it may be async (a read the confirm step needs, e.g. a plan to show):
 *                                the form waits, and a refused read is shown in the form.
 *   describe: (request) => (Node|string)[]  — what the call will do, in words
 *   detail?: (request) => Node — shown under the words (e.g. the plan a write will apply)
 *   method                     — the AdminService method
 *   verb                       — the confirm button's text ("Create tenant", "Delete key", …)
 *   danger?                    — a destructive write (the confirm button says so in red)
 *   result?: (answer, request) => Node  — what to show after success (default: "Done.")
 *   refresh: () => Promise     — redraws the page's view after success
 * }
 */
export function writeDialog(host, spec) {
  const body = h('div', { class: 'dialog-body' });
  const box = h(
    'div',
    { class: 'dialog', role: 'dialog', 'aria-modal': 'true', 'aria-label': spec.title, 'data-testid': spec.testid ?? 'dialog' },
    h('h2', null, spec.title),
    body,
  );
  const overlay = h('div', { class: 'overlay', 'data-testid': 'overlay' }, box);
  const close = () => {
    document.removeEventListener('keydown', onKey);
    overlay.remove();
  };
  const onKey = (ev) => {
    if (ev.key === 'Escape' && !busy) close();
  };
  document.addEventListener('keydown', onKey);
  let busy = false;
  const cancel = () => h('button', { type: 'button', 'data-testid': 'cancel', onclick: close }, 'Cancel');

  const editStep = (message) => {
    clear(body);
    const form = h(
      'form',
      {
        class: 'dialog-form',
        onsubmit: async (ev) => {
          ev.preventDefault();
          if (busy) return;
          busy = true;
          for (const b of form.querySelectorAll('button')) b.disabled = true;
          form.append(h('p', { class: 'muted', 'data-testid': 'reading' }, 'Reading…'));
          let request;
          try {
            request = await spec.read();
          } catch (e) {
            busy = false;
            return editStep(e?.code ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e));
          }
          busy = false;
          confirmStep(request);
        },
      },
      spec.fields,
      message ? h('div', { class: 'error', 'data-testid': 'error' }, message) : null,
      h('div', { class: 'actions' }, cancel(), h('button', { type: 'submit', 'data-testid': 'review' }, 'Review…')),
    );
    body.append(form);
    form.querySelector('input:not([type=hidden]),select')?.focus({ preventScroll: true });
  };

  const confirmStep = (request, error) => {
    clear(body);
    overlay.scrollTop = 0;
    const go = h(
      'button',
      { type: 'button', class: spec.danger ? 'danger' : 'primary', 'data-testid': 'confirm', onclick: () => void run(request) },
      spec.verb,
    );
    body.append(
      h(
        'div',
        { class: 'confirm-step' },
        h('p', { class: 'will' }, h('strong', null, 'This will: '), spec.describe(request)),
        // A refusal right under the words, above a long detail (a plan), where it is seen.
        error && spec.detail ? errorBox(error, false) : null,
        spec.detail ? spec.detail(request) : null,
        h(
          'details',
          { class: 'request' },
          h('summary', null, `The call: AdminService.${spec.method}`),
          h('pre', { class: 'mono', 'data-testid': 'request' }, JSON.stringify(request, null, 2)),
        ),
        error && !spec.detail ? errorBox(error, false) : null,
        h(
          'div',
          { class: 'actions' },
          spec.fields ? h('button', { type: 'button', 'data-testid': 'back', onclick: () => editStep() }, '‹ Back') : null,
          cancel(),
          go,
        ),
      ),
    );
    go.focus({ preventScroll: true });
  };

  const run = async (request) => {
    busy = true;
    for (const b of body.querySelectorAll('button')) b.disabled = true;
    body.append(h('p', { class: 'muted', 'data-testid': 'working' }, 'Working…'));
    let answer;
    try {
      answer = await adminApi(spec.method, request);
    } catch (e) {
      busy = false;
      return confirmStep(request, e);
    }
    busy = false;
    clear(body);
    overlay.scrollTop = 0;
    body.append(
      spec.result ? spec.result(answer, request) : h('p', { 'data-testid': 'done' }, 'Done.'),
      h('div', { class: 'actions' }, h('button', { type: 'button', class: 'primary', 'data-testid': 'close', onclick: close }, 'Close')),
    );
    body.querySelector('[data-testid=close]').focus({ preventScroll: true });
    try {
      await spec.refresh();
    } catch (e) {
      body.append(h('div', null, h('p', { class: 'muted' }, 'Done, but the page could not be redrawn:'), errorBox(e)));
    }
  };

  host.append(overlay);
  if (spec.fields) editStep();
  else confirmStep(spec.read ? spec.read() : {});
  return { close };
}

/** A value to copy (a token, a secret, a configuration): shown as text, with a button that copies it. */
export function copyable(text, testid, label = 'Copy') {
  const pre = h('pre', { class: 'mono copy-text', 'data-testid': testid }, text);
  const status = h('span', { class: 'muted small' });
  const button = h(
    'button',
    {
      type: 'button',
      class: 'copy',
      'data-testid': `copy-${testid}`,
      onclick: async () => {
        // The clipboard API needs a secure context (HTTPS or localhost); elsewhere the text is selected
        // for Ctrl+C.
        try {
          await navigator.clipboard.writeText(text);
          status.textContent = 'copied';
        } catch {
          const range = document.createRange();
          range.selectNodeContents(pre);
          getSelection().removeAllRanges();
          getSelection().addRange(range);
          status.textContent = 'selected: press Ctrl+C';
        }
      },
    },
    label,
  );
  return h('div', { class: 'copyable' }, h('div', { class: 'copy-bar' }, button, status), pre);
}

/** A labelled input for a dialog's form. */
export function field(label, input, hint) {
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, hint ? h('div', { class: 'muted small' }, hint) : null);
}

/** "a, b c" -> ['a', 'b', 'c']. */
export function list(value) {
  return value
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
