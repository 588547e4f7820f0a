// A table that renders one page of its rows at a time, so that a zone of thousands of records never
// puts thousands of rows in the DOM.
import { clear, h } from './dom.js';

/**
 * columns: [{ title, cell(row) -> Node|string, class? }]; rows: the full (already filtered) list.
 * detail(row) -> Node (optional): a row click shows it under the row.
 */
export function pagedTable({ columns, rows, pageSize = 100, empty = 'Nothing to show.', rowAttrs, detail, testid, pager: withPager = true }) {
  const wrap = h('div', { class: 'paged', 'data-testid': testid ?? 'table' });
  let page = 0;
  const pages = Math.max(1, Math.ceil(rows.length / pageSize));
  const render = () => {
    clear(wrap);
    if (rows.length === 0) {
      wrap.append(h('p', { class: 'muted', 'data-testid': 'empty' }, empty));
      return;
    }
    const first = page * pageSize;
    const slice = rows.slice(first, first + pageSize);
    const body = h('tbody');
    for (const row of slice) {
      const tr = h(
        'tr',
        rowAttrs ? rowAttrs(row) : null,
        columns.map((c) => h('td', { class: c.class }, c.cell(row))),
      );
      if (detail) {
        tr.classList.add('clickable');
        tr.addEventListener('click', (ev) => {
          if (ev.target instanceof Element && ev.target.closest('a,button,input,select')) return;
          const next = tr.nextElementSibling;
          if (next?.classList.contains('detail')) return next.remove();
          tr.after(h('tr', { class: 'detail' }, h('td', { colspan: String(columns.length) }, detail(row))));
        });
      }
      body.append(tr);
    }
    if (withPager && pages > 1) wrap.append(pager(true));
    wrap.append(
      h(
        'table',
        null,
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            columns.map((c) => h('th', { class: c.class }, c.title)),
          ),
        ),
        body,
      ),
    );
    if (withPager) wrap.append(pager());
  };
  const go = (p) => () => {
    page = Math.min(Math.max(p, 0), pages - 1);
    render();
  };
  /** The pager; the copy above the table (top) carries no test ids. */
  const pager = (top = false) => {
    const first = page * pageSize;
    const id = (name) => (top ? undefined : name);
    if (pages === 1) return h('div', { class: 'pager' }, h('span', { 'data-testid': id('range') }, `${rows.length} ${rows.length === 1 ? 'row' : 'rows'}`));
    return h(
      'div',
      { class: 'pager' },
      h('button', { type: 'button', onclick: go(0), disabled: page === 0, 'data-testid': id('first') }, '« First'),
      h('button', { type: 'button', onclick: go(page - 1), disabled: page === 0, 'data-testid': id('prev') }, '‹ Prev'),
      h('span', { 'data-testid': id('range') }, `${first + 1}–${Math.min(first + pageSize, rows.length)} of ${rows.length} · page ${page + 1} of ${pages}`),
      h('button', { type: 'button', onclick: go(page + 1), disabled: page >= pages - 1, 'data-testid': id('next') }, 'Next ›'),
      h('button', { type: 'button', onclick: go(pages - 1), disabled: page >= pages - 1, 'data-testid': id('last') }, 'Last »'),
    );
  };
  render();
  return wrap;
}

/** Lines (e.g. a plan's diff, an entry's OVH calls) shown a page at a time. */
export function pagedLines(lines, { pageSize = 500, testid = 'lines', lineNode } = {}) {
  const wrap = h('div', { class: 'lines', 'data-testid': testid });
  let page = 0;
  const pages = Math.max(1, Math.ceil(lines.length / pageSize));
  const render = () => {
    clear(wrap);
    const first = page * pageSize;
    wrap.append(h('div', { class: 'mono' }, lines.slice(first, first + pageSize).map(lineNode)));
    if (pages > 1) {
      wrap.append(
        h(
          'div',
          { class: 'pager' },
          h(
            'button',
            {
              type: 'button',
              disabled: page === 0,
              onclick: () => {
                page--;
                render();
              },
            },
            '‹ Prev',
          ),
          h('span', null, `lines ${first + 1}–${Math.min(first + pageSize, lines.length)} of ${lines.length}`),
          h(
            'button',
            {
              type: 'button',
              disabled: page >= pages - 1,
              onclick: () => {
                page++;
                render();
              },
            },
            'Next ›',
          ),
        ),
      );
    }
  };
  render();
  return wrap;
}
