/**
 * The console's one stylesheet, one script and its icon, served from memory (the bundled CLI has no files beside it).
 * The script only enhances: every page works as plain HTML forms; with it, people are searched as you type, the
 * pages follow /console/live, and a button marked data-confirm asks first.
 */

export const CONSOLE_CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#5b6470;--line:#d5d9de;--accent:#0b5fff;--ok:#0a7a2f;--bad:#b3261e;--warn:#8a5a00;--card:#f5f7f9}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#e8eaed;--muted:#a3acb7;--line:#323840;--accent:#7aa7ff;--ok:#5fd38a;--bad:#ff8a80;--warn:#ffcc66;--card:#1b1f24}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.45 system-ui,sans-serif;background:var(--bg);color:var(--fg)}
a{color:var(--accent)}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:var(--bg);padding:4px}
header{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;padding:8px 16px;border-bottom:1px solid var(--line)}
header nav ul{display:flex;flex-wrap:wrap;gap:4px 12px;list-style:none;margin:0;padding:0}
header nav a[aria-current=page]{font-weight:700;text-decoration:none}
header .who{margin-left:auto;color:var(--muted);font-size:.9em;display:flex;gap:8px;align-items:center}
main{padding:12px 16px;max-width:1100px}
h1{font-size:1.4em;margin:.3em 0 .6em}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
button,input,select{font:inherit;color:inherit;background:var(--card);border:1px solid var(--line);border-radius:6px;padding:6px 10px;min-height:40px}
textarea{font:14px/1.4 ui-monospace,monospace;color:inherit;background:var(--card);border:1px solid var(--line);border-radius:6px;padding:6px;width:100%}
input.command{font-family:ui-monospace,monospace;width:100%}ul.plain{margin:0;padding-left:1.1em}dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:0 12px;margin:4px 0}dl.facts dd{margin:0}
input,select{max-width:100%}button{cursor:pointer}button.danger{border-color:var(--bad);color:var(--bad)}
form.inline{display:inline-flex;gap:6px;align-items:center;margin:2px 4px 2px 0;flex-wrap:wrap}
label{display:inline-block;margin-right:4px}
.flash{padding:8px 12px;border-radius:6px;border:1px solid var(--line);margin-bottom:12px}
.flash.ok{border-color:var(--ok);color:var(--ok)}.flash.error{border-color:var(--bad);color:var(--bad)}
.badge{display:inline-block;padding:0 8px;border-radius:10px;border:1px solid currentColor;font-size:.85em;margin:1px 2px}
.good{color:var(--ok)}.bad{color:var(--bad)}.warn{color:var(--warn)}.muted{color:var(--muted)}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px;margin:8px 0}
.qr svg{width:240px;height:240px;background:#fff;padding:8px}
table.events td{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:0}table.events td:first-child{max-width:none;width:1%}
table.events th.door{width:24%}table.events th.who{width:18%}table.events th.what{width:30%}
@media (max-width:640px){thead{display:none}tr{display:block;border-bottom:2px solid var(--line);padding:6px 0}td{display:block;border:0;padding:2px 4px}td[data-label]::before{content:attr(data-label) ": ";color:var(--muted)}header .who{margin-left:0}table.events td{white-space:normal;max-width:none}}
`;

export const CONSOLE_JS = `
(() => {
  const $ = (s, el = document) => el.querySelector(s);
  document.addEventListener('submit', (e) => {
    const b = e.submitter;
    const ask = (b && b.dataset.confirm) || e.target.dataset.confirm;
    if (ask && !confirm(ask)) { e.preventDefault(); return; }
    if (b && e.target.method === 'post') { b.disabled = true; b.setAttribute('aria-busy', 'true'); b.textContent += '…'; }
  });
  // A button data-copy="ID" copies the value of the field ID (an enrolment code's command), and says so.
  document.addEventListener('click', async (e) => {
    const b = e.target.closest && e.target.closest('button[data-copy]');
    if (!b) return;
    const field = document.getElementById(b.dataset.copy);
    const said = document.getElementById(b.dataset.copy + '-copied');
    let done = false;
    try { await navigator.clipboard.writeText(field.value); done = true; }
    catch { field.select(); done = document.execCommand('copy'); }
    if (said) said.textContent = done ? 'Copied.' : 'Select the line and copy it.';
  });
  const search = $('#people-search');
  if (search) {
    const out = $('#people-results');
    let timer, seq = 0;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const mine = ++seq;
        const r = await fetch('/console/people/search?q=' + encodeURIComponent(search.value), { credentials: 'same-origin' });
        if (r.status === 401) { location.href = '/console/signin?m=expired'; return; }
        const text = await r.text();
        if (mine === seq) { out.innerHTML = text; history.replaceState(null, '', '?q=' + encodeURIComponent(search.value)); }
      }, 200);
    });
  }
  const live = document.body.dataset.live;
  if (live) {
    const events = document.getElementById('events');
    const after = events && events.dataset.after ? '&after=' + encodeURIComponent(events.dataset.after) : '';
    const filter = document.body.dataset.liveFilter ? '&' + document.body.dataset.liveFilter : '';
    const source = new EventSource('/console/live?page=' + encodeURIComponent(live) + after + filter);
    // A row is replaced only when it changed: the stream sends every row once right after it connects, and a row
    // replaced by an identical one took the keyboard's focus and the seconds typed into it. A row that did change
    // (the door unlocked, say) keeps what the operator was doing in it: the values typed and the focused control.
    const replaceRow = (el, fresh) => {
      for (const input of el.querySelectorAll('input[id]')) {
        const twin = input.value !== input.defaultValue && fresh.querySelector('#' + CSS.escape(input.id));
        if (twin) twin.value = input.value;
      }
      const active = el.contains(document.activeElement) ? document.activeElement : null;
      // The same control by its id, else by its name; never another control in its place: "Lockdown" become "End
      // lockdown" under the operator's finger would end a lockdown at the next Enter.
      const label = active && active.getAttribute('aria-label');
      const focus = active && ((active.id && fresh.querySelector('#' + CSS.escape(active.id))) || (label && fresh.querySelector('[aria-label="' + CSS.escape(label) + '"]')));
      el.replaceWith(fresh);
      if (focus) focus.focus({ preventScroll: true });
    };
    source.addEventListener('replace', (e) => {
      const { id, html, parent } = JSON.parse(e.data);
      const el = document.getElementById(id);
      const t = document.createElement('template');
      t.innerHTML = html;
      const fresh = t.content.firstElementChild;
      if (!fresh) return;
      if (el) { if (!fresh.isEqualNode(el)) replaceRow(el, fresh); }
      else if (parent && document.getElementById(parent)) document.getElementById(parent).append(fresh);
    });
    source.addEventListener('prepend', (e) => {
      const { id, html, match } = JSON.parse(e.data);
      const list = document.getElementById(id);
      if (!list) return;
      const f = document.forms.filter;
      const want = (k) => (f && f.elements[k] ? f.elements[k].value.trim().toLowerCase() : '');
      const ok = Object.entries(match || {}).every(([k, v]) => !want(k) || String(v).toLowerCase().includes(want(k)));
      if (!ok) return;
      list.insertAdjacentHTML('afterbegin', html);
      while (list.children.length > 1000) list.lastElementChild.remove();
    });
    source.addEventListener('signedout', () => { source.close(); location.href = '/console/signin?m=expired'; });
  }
})();
`;

/** The console's icon (a door), linked from every page and answered for /favicon.ico. */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="7" y="2" width="18" height="28" rx="2" fill="#0b5fff"/><circle cx="20" cy="17" r="2" fill="#fff"/></svg>';
