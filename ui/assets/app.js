// snap ui: a small single-page app over the JSON API of package ui.
// Everything shown comes from /api/*; every text is inserted as text
// (el() never parses HTML), so nothing a transcript or a file holds can
// run here.
'use strict';

const state = {
  session: '',     // the session shown
  sessions: [],
  view: '',        // the current route's view
  selected: null,  // the checkpoint id selected in the timeline (r rewinds to it)
  dialogOpen: false,
  busy: false,     // an undo or redo is running
  refresh: null,   // re-renders the current view (events)
  refreshing: false, // a refresh is on its way: its view keeps the focus (show)
  held: null,      // a refresh's view that arrived while the dialog was open (show)
};

// el builds an element: el('a', {href: '#/'}, 'text', child, ...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

const $ = (id) => document.getElementById(id);

// Characters that can make a name read as another one: the bidirectional
// controls (U+202A–U+202E embeddings and overrides, U+2066–U+2069
// isolates, the marks U+200E, U+200F and U+061C), invisible ones
// (U+200B–U+200D, U+2060–U+2064, U+FEFF), the line and paragraph
// separators, and control characters (C0, DEL, C1). "evil\u202etxt.exe"
// would show as "evilexe.txt". A path, summary or tool call id holding one
// shows it escaped, as \u202e in a style of its own (class esc), never as
// what it does.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const UNSAFE_BUT_TAB = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const charNames = {
  '\u061c': 'ARABIC LETTER MARK', '\u200e': 'LEFT-TO-RIGHT MARK', '\u200f': 'RIGHT-TO-LEFT MARK',
  '\u202a': 'LEFT-TO-RIGHT EMBEDDING', '\u202b': 'RIGHT-TO-LEFT EMBEDDING', '\u202c': 'POP DIRECTIONAL FORMATTING',
  '\u202d': 'LEFT-TO-RIGHT OVERRIDE', '\u202e': 'RIGHT-TO-LEFT OVERRIDE', '\u2066': 'LEFT-TO-RIGHT ISOLATE',
  '\u2067': 'RIGHT-TO-LEFT ISOLATE', '\u2068': 'FIRST STRONG ISOLATE', '\u2069': 'POP DIRECTIONAL ISOLATE',
};

// safe is text s as nodes to insert: s itself, or its runs with every
// unsafe character replaced by an escape element (tabs kept when
// keepTabs: a line of a diff).
function safe(s, keepTabs) {
  s = s === undefined || s === null ? '' : String(s);
  const re = keepTabs ? UNSAFE_BUT_TAB : UNSAFE;
  if (!re.test(s)) return s;
  const out = [];
  let run = '';
  for (const c of s) {
    if (!re.test(c)) { run += c; continue; }
    if (run) out.push(run);
    run = '';
    const hex = c.codePointAt(0).toString(16).padStart(4, '0');
    const name = charNames[c] || (c <= '\u009f' ? 'a control character' : 'an invisible character');
    out.push(el('span', {class: 'esc', title: 'U+' + hex.toUpperCase() + ' ' + name + ', shown escaped'}, '\\u' + hex));
  }
  if (run) out.push(run);
  return out;
}

// pathEl is a path as the page shows it (safe).
function pathEl(p) {
  return el('span', {class: 'path'}, safe(p));
}

// The token: from the URL 'snap ui' printed, kept in sessionStorage (per
// origin: this server only; a cookie would go to every port of the host)
// and sent in a header on every API call.
const token = (() => {
  const fromURL = new URLSearchParams(location.search).get('token');
  if (fromURL) sessionStorage.setItem('snap.token', fromURL);
  return fromURL || sessionStorage.getItem('snap.token') || '';
})();
const short = (id) => (id || '').slice(0, 12);
const enc = encodeURIComponent;

// when is a time as people read it: the time of day today, else the date
// too (the full time is in the tooltip: whenEl).
function when(t) {
  if (!t) return '';
  const d = new Date(t);
  const time = d.toLocaleTimeString(undefined, {hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false});
  if (d.toDateString() === new Date().toDateString()) return time;
  return d.toLocaleDateString(undefined, {year: 'numeric', month: 'short', day: 'numeric'}) + ' ' + time;
}

function whenEl(t) {
  return el('time', {datetime: t, title: t ? new Date(t).toString() : ''}, when(t));
}

// api calls the server; an error answer throws an Error with .code.
async function api(path, params, body) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const url = '/api/' + path + (q.toString() ? '?' + q : '');
  const opts = body === undefined ? {headers: {'X-Snap-Token': token}} :
    {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Snap-Token': token}, body: JSON.stringify(body)};
  let res;
  try {
    res = await fetch(url, opts);
  } catch (e) {
    const err = new Error('snap ui did not answer (' + e.message + '): is it still running?');
    err.code = 'unreachable';
    throw err;
  }
  let data = await res.json().catch(() => null);
  if (!data || (!res.ok && !data.error)) data = {error: {code: 'bad_answer', message: 'the server answered ' + res.status + ' ' + res.statusText + ' to ' + path}};
  if (data.error && !data.result) {
    const err = new Error(data.error.message);
    err.code = data.error.code;
    throw err;
  }
  return data;
}

function notice(text, kind) {
  const n = $('notice');
  n.replaceChildren();
  if (!text) { n.hidden = true; return; }
  n.className = kind || '';
  fill(n, [text].flat(Infinity).map((x) => typeof x === 'string' ? safe(x) : x));
  n.hidden = false;
}

// showError puts what went wrong in the place of the view, never a blank
// page or the previous view: the server's message and code, and for a
// damaged store (an object missing or corrupt) what it means and what to
// run. Other views, which need other objects, may still work.
function showError(e) {
  const damaged = e.code === 'corrupt' || e.code === 'object_missing';
  show(el('div', {class: 'panel failure', id: 'error', role: 'alert'},
    el('h1', {}, damaged ? 'The store is damaged: this page cannot be shown' : 'This page cannot be shown'),
    el('p', {class: 'mono'}, safe(e.message)),
    damaged ? el('p', {}, 'Something this page needs is missing or corrupt in the project\'s .snap directory. ',
      el('code', {}, 'snap fsck'), ' in the project says what is lost. Other sessions and checkpoints may still be shown: ',
      el('a', {href: '#/'}, 'all sessions'), '.') : null,
    e.code ? el('p', {class: 'muted'}, 'error code: ' + e.code) : null));
}

// render shows the view the address names, or why it cannot.
async function render() {
  state.refreshing = false; // (a view asked for is not a refresh)
  try {
    await route();
  } catch (e) {
    showError(e);
  }
}

// fill replaces what box shows with nodes (arrays flattened, null, false
// and undefined left out, as el does).
function fill(box, ...nodes) {
  box.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
}

// show replaces the view. A refresh (the store changed under the view)
// keeps the focus on the same control of the same row: the one that has
// it when the view is replaced, not when the refresh began (the user may
// have moved on while it fetched).
// A refresh that arrives while the rewind dialog is open waits for it to
// close: the view under the dialog, and the control that opened it, stay.
function show(...nodes) {
  if (state.refreshing && state.dialogOpen) {
    state.held = nodes;
    return;
  }
  const at = state.refreshing ? focusKey() : null;
  state.refreshing = false;
  state.held = null; // (this view is newer)
  fill($('main'), ...nodes);
  restoreFocus(at);
}

function badgeKind(e) {
  const cls = e.kind === 'pre-rewind' ? 'badge safety' : 'badge';
  return el('span', {class: cls, title: 'kind'}, e.kind);
}

function badgeActor(actor) {
  if (!actor) return null;
  return el('span', {class: 'badge ' + actor, title: 'who made this change'}, actor === 'user' ? 'you' : actor);
}

function stats(s) {
  if (!s) return '';
  return el('span', {class: 'stats mono', title: 'files added, modified, deleted'},
    el('span', {class: 'a'}, '+' + s.added), ' ', el('span', {class: 'm'}, '~' + s.modified), ' ', el('span', {class: 'd'}, '-' + s.deleted));
}

// ---- routing ----------------------------------------------------------

function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  notice('');
  state.refresh = null;
  if (parts[0] !== 'search') $('q').value = '';
  if (parts[0] === 's' && parts[1]) {
    setSession(parts[1]);
    if (parts[2] === 'c' && parts[3]) return viewCheckpoint(parts[3]);
    if (parts[2] === 'compare') return viewCompare(parts[3] || '@', parts[4] || 'now');
    if (parts[2] === 'tasks') return viewTasks();
    if (parts[2] === 'blame' && parts[3]) return viewBlame(parts[3], parts.slice(4).join('/'));
    return viewTimeline();
  }
  if (parts[0] === 'search') return viewSearch(parts.slice(1).join('/'));
  return viewSessions();
}

function setTab(name) {
  state.view = name;
  for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('active', a.dataset.tab === name);
  const s = enc(state.session);
  $('tab-timeline').href = '#/s/' + s;
  $('tab-compare').href = '#/s/' + s + '/compare/@/now';
  $('tab-tasks').href = '#/s/' + s + '/tasks';
}

function setSession(name) {
  if (state.session !== name) {
    state.session = name;
    state.selected = null;
    statusLine();
  }
  $('session').value = name;
}

async function loadSessions() {
  const info = await api('info');
  fill($('project'), safe(info.root));
  $('version').textContent = 'snap ' + (info.version || '');
  const data = await api('sessions');
  state.sessions = data.sessions;
  const sel = $('session');
  const cur = state.session || info.session;
  sel.replaceChildren(...data.sessions.map((s) => el('option', {value: s.name}, s.name + (s.archived ? ' (archived)' : ''))));
  if (!data.sessions.some((s) => s.name === cur)) sel.append(el('option', {value: cur}, cur));
  state.session = cur;
  sel.value = cur;
}

let statusAt = 0;

// statusLine shows the session's head and whether the tree changed since
// (a capture: on a big tree a second; at most once in 5 s from events).
async function statusLine(fromEvent) {
  if (fromEvent && Date.now() - statusAt < 5000) return;
  statusAt = Date.now();
  const line = $('statusline');
  try {
    const st = await api('status', {session: state.session});
    const head = st.head ? 'head ' + short(st.head) : 'no checkpoint yet';
    const n = st.files.added.length + st.files.modified.length + st.files.deleted.length;
    line.textContent = state.session + ': ' + head + (st.clean ? ' · nothing changed since' : ' · ' + n + ' file(s) changed since') +
      (st.interrupted ? ' · A MOVE WAS INTERRUPTED' : '');
  } catch (e) {
    line.textContent = state.session + ': ' + e.message;
  }
}

// ---- sessions ---------------------------------------------------------

async function viewSessions() {
  setTab('sessions');
  await loadSessions();
  const table = (list) => el('table', {class: 'sessions'},
    el('thead', {}, el('tr', {}, el('th', {}, 'session'), el('th', {}, 'agent'), el('th', {}, 'checkpoints'), el('th', {}, 'head'), el('th', {}, 'last activity'))),
    el('tbody', {}, list.map((s) => el('tr', {},
      el('td', {}, el('a', {href: '#/s/' + enc(s.name)}, s.name)),
      el('td', {}, s.agent ? s.agent : el('span', {class: 'muted', title: 'no hook or MCP client named the agent'}, '—')),
      el('td', {}, s.checkpoints),
      el('td', {class: 'mono'}, short(s.head)),
      el('td', {}, whenEl(s.updated))))));
  const active = state.sessions.filter((s) => !s.archived), archived = state.sessions.filter((s) => s.archived);
  const usage = el('div', {class: 'panel', id: 'usage'}, el('p', {class: 'muted'}, 'Store usage…'));
  show(el('h1', {}, 'Sessions'),
    state.sessions.length === 0 ? el('p', {class: 'muted'}, 'No checkpoint yet: run "snap checkpoint", or let an agent work with the hooks installed.') : table(active),
    archived.length ? [el('h2', {}, 'Archived sessions'), table(archived)] : null,
    usage);
  state.refresh = viewSessions;
  showUsage(usage).catch((e) => fill(usage, el('p', {class: 'muted'}, e.message)));
}

function bytes(n) {
  const u = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}

async function showUsage(box, withGC) {
  const u = await api('usage', {gc: withGC ? '1' : ''});
  const per = Object.entries(u.session_bytes).sort((a, b) => b[1] - a[1]);
  fill(box, el('h2', {}, 'Store usage'),
    el('p', {}, 'The store takes ', el('b', {}, bytes(u.store_bytes)), ' on disk. New content each session\'s checkpoints added: ',
      per.map(([s, n], i) => [i ? ', ' : '', s + ' ' + bytes(n)])),
    u.gc ? el('p', {}, 'snap gc would now free ', el('b', {}, bytes(u.gc.bytes_freed)), ', expiring ' + u.gc.expired + ' checkpoint(s) by the retention policy.') :
      el('button', {type: 'button', onclick: () => showUsage(box, true).catch((e) => notice(e.message, 'error'))}, 'What would snap gc free?'));
}

// ---- timeline ---------------------------------------------------------

async function viewTimeline(limit) {
  setTab('timeline');
  limit = limit || 50;
  const [page, ops] = await Promise.all([api('log', {session: state.session, limit}), api('ops', {session: state.session, n: 30})]);
  const rows = page.entries.map((e) => {
    // A row is selected (r rewinds to it) by a click, or by Enter or
    // Space when it has the focus.
    const tr = el('tr', {class: (e.abandoned ? 'abandoned ' : '') + (state.selected === e.id ? 'sel' : ''), 'data-id': e.id,
      tabindex: '0', 'aria-selected': state.selected === e.id ? 'true' : 'false'},
      el('td', {class: 'mono nowrap'}, '#' + e.seq),
      el('td', {class: 'nowrap'}, whenEl(e.time)),
      el('td', {}, badgeKind(e), ' ', badgeActor(e.actor), e.head ? el('span', {class: 'badge head'}, 'head') : null,
        e.abandoned ? el('span', {class: 'badge', title: 'a rewind left this branch; it is kept'}, 'branch') : null),
      el('td', {}, el('a', {href: '#/s/' + enc(state.session) + '/c/' + e.id}, safe(e.summary || '(' + e.kind + ')')),
        e.labels ? e.labels.map((l) => el('span', {class: 'badge'}, '🏷 ', safe(l))) : null),
      el('td', {class: 'mono wide'}, safe(e.call || e.message_id || '')),
      el('td', {}, stats(e.stats)),
      el('td', {}, el('button', {class: 'small', type: 'button', onclick: () => openRewind(e)}, 'Rewind…')));
    const select = () => {
      state.selected = e.id;
      for (const r of tr.parentNode.children) {
        r.classList.toggle('sel', r === tr);
        r.setAttribute('aria-selected', r === tr ? 'true' : 'false');
      }
    };
    tr.addEventListener('click', (ev) => { if (!ev.target.closest('a,button')) select(); });
    tr.addEventListener('keydown', (ev) => {
      if (ev.target === tr && (ev.key === 'Enter' || ev.key === ' ')) { ev.preventDefault(); select(); }
    });
    return tr;
  });
  const table = el('table', {id: 'timeline'},
    el('thead', {}, el('tr', {}, el('th', {}, '#'), el('th', {}, 'time'), el('th', {}, 'kind'), el('th', {}, 'summary'), el('th', {class: 'wide'}, 'tool call / message'), el('th', {}, 'files'), el('th', {}, ''))),
    el('tbody', {}, rows));
  const more = page.total > page.entries.length ?
    el('div', {class: 'pager'}, el('span', {class: 'muted'}, page.entries.length + ' of ' + page.total),
      el('button', {type: 'button', onclick: () => viewTimeline(limit + 50).catch(showError)}, 'Show 50 more')) : null;
  const opsList = el('div', {class: 'panel', id: 'ops'}, el('h2', {}, 'Operations'),
    ops.ops.length === 0 ? el('p', {class: 'muted'}, 'none') :
      el('ul', {class: 'files'}, ops.ops.map((o, i) => el('li', {},
        el('span', {class: 'opkind'}, o.kind), ' ', el('span', {class: 'muted'}, when(o.time)),
        o.checkpoint ? [' ', el('span', {class: 'mono'}, short(o.checkpoint))] : null,
        o.target ? [' → ', el('span', {class: 'mono'}, short(o.target))] : null,
        i === 0 && o.kind !== 'undo' ? [' ', el('button', {class: 'small', type: 'button', onclick: doUndo}, 'Undo')] : null))));
  show(el('h1', {}, 'Timeline of ', el('span', {class: 'mono'}, state.session)),
    el('div', {class: 'cols'}, el('div', {}, page.total === 0 ? el('p', {class: 'muted'}, 'This session has no checkpoint.') : table, more), opsList));
  state.refresh = () => viewTimeline(limit);
}

// ---- checkpoint detail ------------------------------------------------

// FILES: the changed files a checkpoint's page, or a compare, lists at
// once; the others are a page away (a checkpoint may change 20,000).
const FILES = 200;

async function viewCheckpoint(ref, convOffset) {
  setTab('timeline');
  const c = await api('show', {session: state.session, ref, offset: 0, limit: FILES});
  state.selected = c.id;
  const s = enc(state.session);
  const diffBox = el('div', {id: 'filediff'});
  const filesBox = el('div', {id: 'files-box'});
  showFiles(filesBox, c, c, diffBox);
  const meta = el('dl', {class: 'meta'},
    el('dt', {}, 'checkpoint'), el('dd', {class: 'mono'}, c.id),
    el('dt', {}, 'session'), el('dd', {}, c.session + ' #' + c.seq),
    el('dt', {}, 'time'), el('dd', {}, when(c.time)),
    el('dt', {}, 'kind'), el('dd', {}, badgeKind(c), ' ', badgeActor(c.actor)),
    c.call || c.message_id ? [el('dt', {}, 'tool call / message'), el('dd', {class: 'mono'}, safe(c.call || c.message_id))] : null,
    c.summary ? [el('dt', {}, 'summary'), el('dd', {}, safe(c.summary))] : null,
    c.labels ? [el('dt', {}, 'labels'), el('dd', {}, safe(c.labels.join(', ')))] : null,
    el('dt', {}, 'parent'), el('dd', {class: 'mono'}, c.parent ? el('a', {href: '#/s/' + s + '/c/' + c.parent}, short(c.parent)) : 'none'));
  const actions = el('div', {class: 'buttons left'},
    el('button', {type: 'button', class: 'danger', onclick: () => openRewind(c)}, 'Rewind to this…'),
    el('a', {class: 'button', href: '#/s/' + s + '/compare/' + c.id + '/now'}, 'Compare with now'),
    c.parent ? el('a', {class: 'button', href: '#/s/' + s + '/compare/' + c.parent + '/' + c.id}, 'Compare with its parent') : null);
  const docs = (c.state || []).map((d) => el('li', {}, safe(d.name), ' ', el('span', {class: 'muted'}, (d.size || 0) + ' bytes')));
  const conv = el('div', {id: 'conversation'});
  const taskBox = el('div', {id: 'tasks-then'});
  show(el('h1', {}, 'Checkpoint ', el('span', {class: 'mono'}, short(c.id))),
    el('div', {class: 'cols'},
      el('div', {},
        el('div', {class: 'panel'}, meta, actions),
        el('h2', {}, 'Changed files'),
        filesBox,
        diffBox,
        el('h2', {}, 'Conversation at this point'), conv),
      el('div', {}, el('div', {class: 'panel'}, el('h2', {}, 'State documents'), docs.length ? el('ul', {class: 'files'}, docs) : el('p', {class: 'muted'}, 'none')), taskBox)));
  loadConversation(conv, c.id, convOffset);
  api('tasks', {session: state.session, ref: c.id}).then((t) => {
    const list = t.tasks.tasks || [];
    if (!list.length) return;
    const icon = {committed: '✅', reverted: '❌', open: '⏳'};
    taskBox.append(el('div', {class: 'panel'}, el('h2', {}, 'Tasks at this point'),
      el('ul', {class: 'files'}, list.map((x) => el('li', {}, (t.tasks.current === x.id ? '📝 ' : (icon[x.status] || '') + ' '), safe(x.goal),
        ' ', el('span', {class: 'badge'}, x.status))))));
  }).catch(() => {});
  state.refresh = null; // a checkpoint does not change
}

// pager is the line above (and below) a long list: which items of how
// many it shows, and buttons to the pages before and after (go(offset)).
function pager(what, offset, shown, total, size, go) {
  if (total <= size && offset === 0) return null;
  return el('div', {class: 'pager'},
    el('span', {class: 'muted'}, what + ' ' + (shown ? offset + 1 : offset) + '–' + (offset + shown) + ' of ' + total),
    offset > 0 ? el('button', {type: 'button', 'data-go': 'earlier', onclick: () => go(Math.max(0, offset - size))}, 'Earlier ' + what) : null,
    offset + shown < total ? el('button', {type: 'button', 'data-go': 'later', onclick: () => go(offset + size)}, 'More ' + what) : null);
}

// showFiles lists one page of checkpoint c's changed files (page: a show
// answer, its files from files_offset on) in box, each a click from its
// diff (in diffBox) and from blame.
function showFiles(box, c, page, diffBox, focus) {
  const s = enc(state.session);
  const items = [];
  for (const [kind, list] of [['added', page.files.added], ['modified', page.files.modified], ['deleted', page.files.deleted]]) {
    for (const p of list) {
      items.push(el('li', {}, el('span', {class: 'badge'}, kind), ' ',
        c.parent ? el('button', {class: 'link', type: 'button', onclick: () => showFileDiff(diffBox, c.parent, c.id, p)}, pathEl(p)) : pathEl(p),
        kind !== 'deleted' ? [' ', el('a', {class: 'muted', href: '#/s/' + s + '/blame/' + c.id + '/' + p.split('/').map(enc).join('/'), title: 'who wrote each line'}, 'blame')] : null));
    }
  }
  const go = async (offset) => {
    try {
      const next = await api('show', {session: state.session, ref: c.id, offset, limit: FILES});
      showFiles(box, c, next, diffBox, offset > page.files_offset ? 'later' : 'earlier');
    } catch (e) {
      notice(e.message, 'error');
    }
  };
  const pg = () => pager('files', page.files_offset, items.length, page.files_total, FILES, go);
  fill(box, pg(), items.length ? el('ul', {class: 'files', id: 'files'}, items) :
    el('p', {class: 'muted'}, c.parent_expired ? 'its parent expired: the changes cannot be listed' : page.files_total ? 'no file on this page' : 'no file changed'),
    items.length > 20 ? pg() : null);
  if (focus) {
    const b = box.querySelector('.pager button[data-go="' + focus + '"]') || box.querySelector('.pager button');
    if (b) b.focus();
  }
}

async function showFileDiff(box, from, to, path) {
  box.replaceChildren(el('p', {class: 'muted'}, 'Loading…'));
  try {
    const d = await api('diff', {session: state.session, from, to, path});
    fill(box, d.files.map((f) => fileDiff(f, 'unified')));
  } catch (e) {
    box.replaceChildren(el('p', {class: 'muted'}, e.message));
  }
}

// loadConversation shows the conversation of checkpoint id, 50 messages a
// page; the last page first (where the step was).
async function loadConversation(box, id, offset) {
  const limit = 50;
  try {
    let page = await api('conversation', {session: state.session, ref: id, offset: offset || 0, limit});
    if (offset === undefined && page.total > limit) {
      page = await api('conversation', {session: state.session, ref: id, offset: page.total - limit, limit});
    }
    // (built twice, top and bottom: a clone would not carry the handlers)
    const pager = () => el('div', {class: 'pager'},
      el('span', {class: 'muted'}, 'messages ' + (page.offset + 1) + '–' + (page.offset + page.messages.length) + ' of ' + page.total),
      page.offset > 0 ? el('button', {type: 'button', onclick: () => loadConversation(box, id, Math.max(0, page.offset - limit))}, 'Earlier') : null,
      page.offset + page.messages.length < page.total ? el('button', {type: 'button', onclick: () => loadConversation(box, id, page.offset + limit)}, 'Later') : null);
    fill(box, pager(), page.messages.map((m) => message(m)), page.messages.length > 5 ? pager() : null);
  } catch (e) {
    box.replaceChildren(el('p', {class: 'muted'}, e.code === 'no_path' || e.code === 'usage' ? 'This checkpoint recorded no conversation.' : e.message));
  }
}

const FOLD = 2000;

function folded(text) {
  if (text.length <= FOLD) return el('pre', {}, text);
  return el('details', {}, el('summary', {}, text.length + ' characters (show)'), el('pre', {}, text));
}

function message(m, cls) {
  const role = m.role || 'message';
  return el('div', {class: 'msg ' + role + (cls ? ' ' + cls : '')},
    el('span', {class: 'role'}, role), m.timestamp ? el('span', {class: 'muted'}, ' · ' + when(m.timestamp)) : null,
    m.text ? el('div', {class: 'text'}, m.text.length > FOLD * 4 ? m.text.slice(0, FOLD * 4) + '… (' + m.text.length + ' characters)' : m.text) : null,
    (m.tool_calls || []).map((t) => el('details', {}, el('summary', {}, 'tool call ', el('b', {}, t.name), t.id ? ' · ' + t.id : ''),
      folded(t.input ? JSON.stringify(t.input, null, 2) : ''))),
    (m.tool_results || []).map((t) => el('details', {}, el('summary', {}, t.is_error ? 'tool error' : 'tool result', t.tool_use_id ? ' · ' + t.tool_use_id : '',
      ' · ' + (t.content || '').length + ' characters'), folded(t.content || ''))));
}

// ---- compare ----------------------------------------------------------

const PATCHES = 50; // files whose patch a compare shows at once

async function viewCompare(from, to, mode, offset) {
  setTab(to === 'now' && from === '@' ? 'compare' : 'timeline');
  mode = mode || localStorage.getItem('snap.diffmode') || 'unified';
  offset = offset || 0;
  const toArg = to === 'now' ? '' : to;
  // One page of the files (FILES of them), without their patches.
  const d = await api('diff', {session: state.session, from, to: toArg, stat: '1', offset, limit: FILES});
  // The patches of the page's first files, in one request; the others on demand.
  const first = d.files.slice(0, PATCHES).filter((f) => !f.binary).map((f) => f.path);
  const patched = new Map();
  if (first.length) {
    const p = await api('diff', {session: state.session, from, to: toArg, path: first});
    for (const f of p.files) patched.set(f.path, f);
  }
  const title = el('h1', {}, 'Compare ', el('span', {class: 'mono'}, from === '@' ? 'the head' : short(d.from)), ' with ',
    el('span', {class: 'mono'}, to === 'now' ? 'the working tree now' : short(to)));
  const toggle = el('div', {class: 'pager'},
    el('label', {}, el('input', {type: 'radio', name: 'mode', checked: mode === 'unified', onchange: () => { localStorage.setItem('snap.diffmode', 'unified'); viewCompare(from, to, 'unified', offset).catch(showError); }}), ' unified'),
    el('label', {}, el('input', {type: 'radio', name: 'mode', checked: mode === 'split', onchange: () => { localStorage.setItem('snap.diffmode', 'split'); viewCompare(from, to, 'split', offset).catch(showError); }}), ' side by side'),
    el('span', {class: 'muted'}, d.files_total + ' file(s) differ'));
  const go = (at) => viewCompare(from, to, mode, at).then(() => {
    const b = document.querySelector('#main .pager button[data-go="' + (at > offset ? 'later' : 'earlier') + '"]') || document.querySelector('#main .pager button');
    if (b) b.focus();
  }).catch(showError);
  const pg = () => pager('files', d.files_offset, d.files.length, d.files_total, FILES, go);
  const files = d.files.map((f, i) => {
    if (patched.has(f.path)) return fileDiff(patched.get(f.path), mode);
    if (f.binary || i < PATCHES) return fileDiff(f, mode);
    const box = el('div', {class: 'file'});
    fill(box, fileHead(f), el('button', {class: 'small', type: 'button', onclick: async () => {
      const p = await api('diff', {session: state.session, from, to: toArg, path: f.path}).catch((e) => notice(e.message, 'error'));
      if (p && p.files[0]) fill(box, fileDiff(p.files[0], mode));
    }}, 'Show the diff'));
    return box;
  });
  const convs = (d.state || []).map((s) => {
    if (s.conversation) {
      const c = s.conversation;
      return el('div', {}, el('h2', {}, 'State document ' + s.name + ' (' + s.status + '): ' + c.common + ' message(s) in common'),
        c.removed.map((m) => message(m, 'removed')), c.added.map((m) => message(m, 'added')));
    }
    return el('div', {}, el('h2', {}, 'State document ' + s.name + ' (' + s.status + ')'), s.patch ? diffPre(s.patch) : el('p', {class: 'muted'}, 'binary or too large to show'));
  });
  show(title, toggle, pg(), files.length ? files : el('p', {class: 'muted'}, d.files_total ? 'No file on this page.' : 'No file differs.'),
    files.length > 5 ? pg() : null, convs);
  if (to === 'now') state.view = 'compare-now';
}

function changedBy(f) {
  if (!f.changed_by || !f.changed_by.length) return null;
  return el('span', {class: 'muted'}, ' · changed by ', f.changed_by.map((c) =>
    (c.session ? c.session : 'a safety capture') + (c.actor !== 'unknown' ? ' (' + (c.actor === 'user' ? 'you' : c.actor) + ')' : '') + (c.seq ? ' #' + c.seq : '')).join(', '));
}

function fileHead(f) {
  return el('div', {class: 'filehead'}, pathEl(f.path), ' ', el('span', {class: 'badge'}, f.status),
    f.binary ? '' : el('span', {class: 'stats mono'}, ' ', el('span', {class: 'a'}, '+' + f.lines_added), ' ', el('span', {class: 'd'}, '-' + f.lines_removed)), changedBy(f));
}

function fileDiff(f, mode) {
  const head = fileHead(f);
  if (f.binary) return el('div', {}, head, el('p', {class: 'muted'}, 'binary file'));
  if (!f.patch) return el('div', {}, head, el('p', {class: 'muted'}, f.old_mode !== f.new_mode ? 'mode ' + (f.old_mode || 'none') + ' → ' + (f.new_mode || 'none') : 'empty'));
  return el('div', {class: 'file'}, head, mode === 'split' ? sideBySide(f.patch) : diffPre(f.patch));
}

function diffPre(patch) {
  const lines = patch.replace(/\n$/, '').split('\n');
  return el('pre', {class: 'diff'}, lines.map((l) => el('span', {
    class: l.startsWith('@@') ? 'hunk' : l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : '',
  }, l ? safe(l, true) : ' ')));
}

// sideBySide lays a unified patch out in two columns.
function sideBySide(patch) {
  const rows = [];
  let ol = 0, nl = 0, dels = [], adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
      const d = dels[i], a = adds[i];
      rows.push(el('tr', {}, el('td', {class: 'num'}, d ? d[0] : ''), el('td', {class: d ? 'del' : ''}, d ? safe(d[1], true) : ''),
        el('td', {class: 'num'}, a ? a[0] : ''), el('td', {class: a ? 'add' : ''}, a ? safe(a[1], true) : '')));
    }
    dels = []; adds = [];
  };
  for (const l of patch.split('\n')) {
    if (l.startsWith('---') || l.startsWith('+++')) continue;
    const h = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(l);
    if (h) { flush(); ol = +h[1]; nl = +h[2]; rows.push(el('tr', {}, el('td', {colspan: '4', class: 'muted'}, safe(l, true)))); continue; }
    if (l.startsWith('-')) { dels.push([ol++, l.slice(1)]); continue; }
    if (l.startsWith('+')) { adds.push([nl++, l.slice(1)]); continue; }
    if (l.startsWith('\\')) continue;
    flush();
    if (l === '' ) continue;
    rows.push(el('tr', {}, el('td', {class: 'num'}, ol++), el('td', {}, safe(l.slice(1), true)), el('td', {class: 'num'}, nl++), el('td', {}, safe(l.slice(1), true))));
  }
  flush();
  return el('table', {class: 'sbs'}, el('tbody', {}, rows));
}

// ---- blame ------------------------------------------------------------

async function viewBlame(ref, path) {
  setTab('timeline');
  const b = await api('blame', {session: state.session, ref, path});
  let prev = '';
  const rows = b.lines.map((l) => {
    const first = l.checkpoint !== prev;
    prev = l.checkpoint;
    return el('tr', {class: first ? 'first' : ''},
      el('td', {class: 'num mono'}, l.line),
      el('td', {class: 'who'}, first ? [badgeActor(l.actor === 'unknown' ? '' : l.actor), ' ', l.session, ' ',
        el('a', {class: 'mono', href: '#/s/' + enc(l.session) + '/c/' + l.checkpoint}, short(l.checkpoint)),
        l.message_id ? el('div', {class: 'mono muted'}, safe(l.message_id)) : null] : null),
      el('td', {class: 'nowrap muted'}, first ? whenEl(l.time) : null),
      el('td', {class: 'code'}, safe(l.text, true)));
  });
  show(el('h1', {}, 'Who wrote ', el('span', {class: 'mono'}, pathEl(b.path))),
    el('p', {class: 'muted'}, 'As checkpoint ', el('a', {class: 'mono', href: '#/s/' + enc(state.session) + '/c/' + b.checkpoint}, short(b.checkpoint)),
      ' holds it: each line with the checkpoint that first recorded it, its session and actor.'),
    el('table', {class: 'blame'}, el('tbody', {}, rows)));
}

// ---- search -----------------------------------------------------------

async function viewSearch(q) {
  setTab('');
  $('q').value = q;
  if (!q) return show(el('h1', {}, 'Search'), el('p', {class: 'muted'}, 'Type in the search box: a prompt, a tool call id, a file path, a summary.'));
  const res = await api('search', {q});
  const partial = [res.paths_cut_off ? 'file paths of older checkpoints (out of time)' : '',
    res.conversations_not_searched ? res.conversations_not_searched + ' conversation(s) too large to search' : ''].filter(Boolean);
  show(el('h1', {}, 'Search: ', safe(q)),
    partial.length ? el('p', {class: 'muted', id: 'not-searched'}, 'Not searched: ' + partial.join('; ') + '.') : null,
    res.hits.length === 0 ? el('p', {class: 'muted'}, 'No checkpoint matches.') :
      el('table', {id: 'hits'}, el('thead', {}, el('tr', {}, el('th', {}, 'session'), el('th', {}, '#'), el('th', {}, 'time'), el('th', {}, 'kind'), el('th', {}, 'summary'), el('th', {}, 'matched'))),
        el('tbody', {}, res.hits.map((h) => el('tr', {},
          el('td', {}, h.session), el('td', {class: 'mono nowrap'}, '#' + h.seq), el('td', {}, when(h.time)), el('td', {}, badgeKind(h), ' ', badgeActor(h.actor)),
          el('td', {}, el('a', {href: '#/s/' + enc(h.session) + '/c/' + h.id}, safe(h.summary || '(' + h.kind + ')'))),
          el('td', {}, h.match, h.path ? [': ', pathEl(h.path)] : null))))));
}

// ---- tasks ------------------------------------------------------------

async function viewTasks() {
  setTab('tasks');
  const t = await api('tasks', {session: state.session});
  const byID = new Map(t.tasks.tasks.map((x) => [x.id, x]));
  const icon = {committed: '✅', reverted: '❌', open: '⏳'};
  const item = (x) => el('li', {},
    x.current ? '📝 ' : (icon[x.status] || '') + ' ', el('b', {}, safe(x.goal)), ' ', el('span', {class: 'badge'}, x.status),
    x.summary ? el('div', {}, safe(x.summary)) : null, x.reason ? el('div', {class: 'muted'}, 'reverted: ', safe(x.reason)) : null,
    x.begin ? el('div', {}, el('a', {href: '#/s/' + enc(state.session) + '/c/' + x.begin}, 'its beginning'),
      x.end ? [' · ', el('a', {href: '#/s/' + enc(state.session) + '/compare/' + x.begin + '/' + x.end}, 'its change')] : null) : null,
    x.children && x.children.length ? el('ul', {}, x.children.map((c) => item(byID.get(c)))) : null);
  const roots = t.tasks.tasks.filter((x) => !x.parent);
  const pending = (t.edits.pending_changes || []).map((p) => el('li', {}, el('b', {class: 'mono'}, '[' + p.change_id + '] '), pathEl(p.path), ':' + p.line + ' ' + p.kind,
    el('pre', {class: 'mono'}, safe(p.preview, true))));
  show(el('h1', {}, 'Tasks of ', el('span', {class: 'mono'}, state.session)),
    roots.length ? el('ul', {id: 'tasktree'}, roots.map(item)) : el('p', {class: 'muted'}, 'No task: agents begin one with memo_begin_task or "snap task begin".'),
    el('h2', {}, 'Staged edits'), pending.length ? el('ul', {class: 'files'}, pending) : el('p', {class: 'muted'}, 'none pending'));
  state.refresh = viewTasks;
}

// ---- rewind, undo, redo -----------------------------------------------

let rewindTarget = null;

function rewindRequest(dry) {
  const what = new FormData($('rewind-form')).get('what');
  const paths = $('rewind-paths').value.split('\n').map((s) => s.trim()).filter(Boolean);
  return {session: state.session, target: rewindTarget.id, files_only: what === 'files', conversation_only: what === 'conversation',
    paths, all: $('rewind-all').checked, dry_run: dry};
}

function list(title, items, cls) {
  if (!items || !items.length) return null;
  return [el('h3', {class: cls}, title + ' (' + items.length + ')'), el('ul', {class: cls}, items.map((x) => el('li', {}, x)))];
}

function keptText(k) {
  const who = k.actor === 'user' ? 'your ' + (k.deleted ? 'deletion' : 'edit') :
    (k.deleted ? 'deleted' : 'written') + ' by session ' + k.session + (k.actor === 'agent' ? "'s agent" : '');
  return [pathEl(k.path), ': ' + who + (k.seq ? ' at #' + k.seq : '') + ', ' + when(k.time) +
    (k.merged ? ' — merged: only this session\'s lines go back' : k.conflict ? ' — left as it is (conflict)' : ' — left as it is')];
}

let previewSeq = 0, plan = null;

async function preview() {
  const box = $('rewind-preview');
  const seq = ++previewSeq;
  plan = null;
  $('rewind-go').disabled = true;
  box.dataset.ready = '';
  box.replaceChildren(el('p', {class: 'muted'}, 'Working out what would change…'));
  try {
    const data = await api('rewind', {}, rewindRequest(true));
    if (seq !== previewSeq) return; // a later preview (other options) is on its way
    const r = data.result || data;
    plan = {restored: r.restored, deleted: r.deleted, kept: r.kept.map((k) => k.path)};
    const nothing = !r.restored.length && !r.deleted.length && !r.state.length;
    fill(box, el('h3', {}, 'What this rewind will do'),
      nothing ? el('p', {}, 'Nothing would change.') : null,
      list('restored', r.restored.map(pathEl)), list('deleted', r.deleted.map(pathEl)),
      list('state documents', r.state.map((s) => [safe(s.name) , s.deleted ? ' (removed)' : '', ' → ', pathEl(s.path)])),
      list('KEPT as they are', r.kept.map(keptText), 'kept'),
      list('skipped', (r.skipped || []).map((s) => [pathEl(s.path), ': ', safe(s.reason)])),
      el('p', {class: 'muted'}, 'The state from before is checkpointed first: Undo brings it back.'));
    $('rewind-go').disabled = nothing;
    box.dataset.ready = '1';
  } catch (e) {
    if (seq === previewSeq) box.replaceChildren(el('p', {class: 'error'}, e.message));
  }
}

// The element that had the focus when the dialog opened: it gets it back
// when the dialog closes (Escape, Cancel), as a keyboard user expects.
let rewindOpener = null;

function openRewind(c) {
  rewindTarget = c;
  rewindOpener = document.activeElement !== document.body ? document.activeElement : null;
  fill($('rewind-target'), 'To checkpoint ', el('b', {class: 'mono'}, short(c.id)), ' #' + c.seq + ' of ' + state.session + ' · ' + when(c.time) + ' · ', safe(c.summary || c.kind));
  $('rewind-paths').value = '';
  $('rewind-all').checked = false;
  $('rewind-form').reset();
  state.dialogOpen = true;
  $('rewind').showModal();
  preview();
}

async function doRewind() {
  $('rewind-go').disabled = true;
  try {
    // The plan shown goes with it: if the tree changed since, the server
    // refuses and the dialog shows the new preview (nothing moved).
    const data = await api('rewind', {}, Object.assign(rewindRequest(false), {expect: plan}));
    const r = data.result || data;
    closeRewind();
    const undo = el('button', {type: 'button', onclick: doUndo}, 'Undo');
    notice(['Rewound: ' + r.restored.length + ' restored, ' + r.deleted.length + ' deleted' + (r.kept.length ? ', ' + r.kept.length + ' kept' : '') +
      '. The state from before is checkpoint ' + short(r.safety_checkpoint) + '. ', undo,
      data.error ? ' Some paths failed: ' + data.error.message : ''], data.error ? 'error' : 'ok');
    undo.focus();
    await refreshAll();
  } catch (e) {
    if (e.code === 'changed_since_preview') {
      await preview();
      $('rewind-preview').prepend(el('p', {class: 'error'}, 'The working tree changed since this preview, so nothing was rewound. Here is what a rewind would do now.'));
      return;
    }
    $('rewind-preview').append(el('p', {class: 'error'}, e.message));
  }
}

function closeRewind() {
  state.dialogOpen = false;
  if ($('rewind').open) $('rewind').close();
}

// rewindClosed: however the dialog closed (Escape, Cancel, a rewind), the
// focus goes back where it was; if that element is gone (the view was
// redrawn), to the view. Then a refresh held while it was open is shown.
function rewindClosed() {
  state.dialogOpen = false;
  const back = rewindOpener;
  rewindOpener = null;
  const held = state.held;
  state.held = null;
  if (!(document.activeElement && document.activeElement !== document.body && !$('rewind').contains(document.activeElement))) { // (else moved on already: the rewind's Undo)
    if (back && back.isConnected) back.focus();
    else $('main').focus();
  }
  if (held) show(...held); // (still a refresh: the focus stays on its control)
}

// tabbable lists the elements of box Tab stops at, in order: for a group of
// radio buttons, the checked one only.
function tabbable(box) {
  return [...box.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]')].filter((x) =>
    x.tabIndex >= 0 && !x.disabled && x.getClientRects().length > 0 &&
    !(x.type === 'radio' && !x.checked && box.querySelector('input[type=radio][name="' + x.name + '"]:checked')));
}

// trapFocus keeps Tab and Shift+Tab within an open modal dialog: from its
// last element to its first, and back.
function trapFocus(dialog, ev) {
  if (ev.key !== 'Tab' || !dialog.open) return;
  const items = tabbable(dialog);
  if (!items.length) return;
  const first = items[0], last = items[items.length - 1];
  const at = document.activeElement;
  const same = (a, b) => a === b || (a && b && a.type === 'radio' && b.type === 'radio' && a.name === b.name);
  if (ev.shiftKey && (same(at, first) || !dialog.contains(at))) {
    ev.preventDefault();
    last.focus();
  } else if (!ev.shiftKey && (same(at, last) || !dialog.contains(at))) {
    ev.preventDefault();
    first.focus();
  }
}

// askUndo says what Undo (or Redo) would reverse and asks first: one
// keystroke must not move files unannounced (U7).
async function askUndo(redo) {
  if (state.busy) return;
  try {
    const u = await api('undoable', {session: state.session});
    const op = redo ? u.redo : u.undo;
    if (!op) return notice('Nothing to ' + (redo ? 'redo' : 'undo') + ' in session ' + state.session + '.');
    const what = op.kind + (op.target ? ' to ' + short(op.target) : op.checkpoint ? ' ' + short(op.checkpoint) : '') + ', ' + when(op.time) + ' (operation #' + op.seq + ')';
    notice([(redo ? 'Redo ' : 'Undo ') + what + '? ',
      el('button', {type: 'button', id: redo ? 'redo-confirm' : 'undo-confirm', onclick: redo ? doRedo : doUndo}, redo ? 'Redo it' : 'Undo it'), ' ',
      el('button', {type: 'button', onclick: () => notice('')}, 'Cancel')]);
    $(redo ? 'redo-confirm' : 'undo-confirm').focus();
  } catch (e) {
    notice(e.message, 'error');
  }
}

function busy(on) {
  state.busy = on;
  for (const id of ['undo', 'redo', 'undo-confirm', 'redo-confirm']) if ($(id)) $(id).disabled = on;
}

async function doUndo() {
  if (state.busy) return;
  busy(true);
  try {
    const r = await api('undo', {}, {session: state.session});
    notice(['Undid ' + r.op.kind + (r.rewind ? ': ' + r.rewind.restored.length + ' restored, ' + r.rewind.deleted.length + ' deleted' : '') + '. ',
      el('button', {type: 'button', onclick: doRedo}, 'Redo')], 'ok');
  } catch (e) {
    notice(e.message, 'error');
  }
  busy(false);
  await refreshAll();
}

async function doRedo() {
  if (state.busy) return;
  busy(true);
  try {
    const r = await api('redo', {}, {session: state.session});
    notice('Redid ' + r.op.kind + '.', 'ok');
  } catch (e) {
    notice(e.message, 'error');
  }
  busy(false);
  await refreshAll();
}

async function refreshAll() {
  statusLine();
  if (state.refresh) await state.refresh().catch(showError);
  else if (state.view === 'timeline') await render();
}

// ---- keys and events --------------------------------------------------

function typing(ev) {
  const t = ev.target;
  return t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
}

async function rewindShortcut() {
  // The selected checkpoint, else the one before the head (U10: looked up
  // by id, however old).
  try {
    let ref = state.selected;
    if (!ref) {
      const head = await api('show', {session: state.session, ref: '@'});
      ref = head.parent;
    }
    if (!ref) return notice('No earlier checkpoint to rewind to.');
    openRewind(await api('show', {session: state.session, ref}));
  } catch (e) {
    notice(e.message, 'error');
  }
}

document.addEventListener('keydown', (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev) || state.dialogOpen) return;
  const s = enc(state.session);
  switch (ev.key) {
    case 'h': location.hash = '#/s/' + s; break;
    case 'c': location.hash = '#/s/' + s + '/compare/@/now'; break;
    case 'r': rewindShortcut(); break;
    case 'u': askUndo(false); break;
    case '/': ev.preventDefault(); $('q').focus(); $('q').select(); break;
    default: return;
  }
});

// focusKey names the control of the view that has the focus so that a
// redrawn view can give it back (restoreFocus): its row (data-id), and its
// place among the row's (or the view's) controls.
function focusKey() {
  const a = document.activeElement, main = $('main');
  if (!a || a === main || !main.contains(a)) return null;
  const row = a.closest('[data-id]');
  return {row: row ? row.dataset.id : null, i: tabbable(row || main).indexOf(a)};
}

function restoreFocus(k) {
  if (!k || (document.activeElement && document.activeElement !== document.body)) return; // (the focus moved on meanwhile)
  const scope = k.row ? $('main').querySelector('[data-id="' + CSS.escape(k.row) + '"]') : $('main');
  const e = scope && (k.i >= 0 ? tabbable(scope)[k.i] : scope);
  if (e) e.focus({preventScroll: true});
}

// listen follows the events stream. The page closes it when it goes (a
// reload, another address): a stream left open holds one of the six
// connections a browser opens to a server, and after a few reloads the
// next page would wait a minute for one. A page the browser brings back
// from its cache (Back) opens it again.
function listen() {
  let timer = null;
  const es = new EventSource('/api/events?token=' + enc(token));
  const gone = () => {
    es.close();
    window.removeEventListener('pagehide', gone);
    window.addEventListener('pageshow', (ev) => { if (ev.persisted) { listen(); refreshAll(); } }, {once: true});
  };
  window.addEventListener('pagehide', gone);
  es.addEventListener('change', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (state.dialogOpen || state.busy) return;
      statusLine(true);
      // Cheap views follow at once; a compare or a checkpoint (which may
      // be thousands of files) offers a refresh instead (U4).
      // A refresh that fails says why in the view's place (the store was
      // damaged meanwhile), unless the store was only busy.
      // The focus stays where it was (the same control of the same row).
      if (state.refresh) {
        state.refreshing = true;
        state.refresh().catch((e) => { state.refreshing = false; if (e.code !== 'busy' && e.code !== 'unreachable') showError(e); });
      }
      else if (state.view === 'compare-now') notice(['The working tree or the store changed. ', el('button', {type: 'button', onclick: render}, 'Refresh')]);
    }, 500);
  });
}

window.addEventListener('hashchange', render);
window.addEventListener('DOMContentLoaded', async () => {
  $('session').addEventListener('change', (ev) => { location.hash = '#/s/' + enc(ev.target.value); });
  $('searchform').addEventListener('submit', (ev) => { ev.preventDefault(); location.hash = '#/search/' + enc($('q').value.trim()); });
  $('undo').addEventListener('click', () => askUndo(false));
  $('redo').addEventListener('click', () => askUndo(true));
  $('rewind-cancel').addEventListener('click', closeRewind);
  $('rewind-go').addEventListener('click', doRewind);
  $('rewind').addEventListener('close', rewindClosed);
  $('rewind').addEventListener('keydown', (ev) => trapFocus($('rewind'), ev));
  for (const i of document.querySelectorAll('#rewind-form input, #rewind-paths')) i.addEventListener('change', preview);
  // The token travelled in the URL once; the cookie carries it now.
  if (location.search.includes('token=')) history.replaceState(null, '', location.pathname + location.hash);
  if (!token) {
    show(el('h1', {}, 'snap ui'), el('p', {}, 'This page needs the URL that "snap ui" printed (it carries a token); open that one.'));
    return;
  }
  try {
    await loadSessions();
    statusLine();
  } catch (e) {
    // (the view says why, if it cannot be shown either)
  }
  await render();
  listen();
});
