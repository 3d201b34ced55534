#include "engine/serve/dashboard_assets.hpp"

namespace braid::serve {

const char* const kIndexHtml = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>braid serve</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/app.css"><script src="/chart.js"></script></head>
<body>
<header><h1>braid serve</h1><div id="pairing"><span>pairing code</span> <code id="code">…</code><div id="qr"></div></div></header>
<section><h2>Live transfers</h2><div id="live"><p class="none">No transfer running.</p></div></section>
<section><h2>Offers waiting</h2><table id="offers"><thead><tr><th>id</th><th>peer</th><th>what</th><th>size</th><th>why it waits</th><th></th></tr></thead><tbody></tbody></table></section>
<section><h2>History</h2><table id="history"><thead><tr><th>id</th><th>ended</th><th>peer</th><th>files</th><th>size</th><th>time</th><th>rate</th><th>outcome</th></tr></thead><tbody></tbody></table><pre id="report"></pre></section>
<section id="send-view"><h2>Send</h2><div class="panes">
<div class="pane" id="local-pane"><div class="pane-head">This machine <select id="root-pick"></select> <span id="crumbs"></span></div>
<table id="files"><thead><tr><th></th><th>name</th><th>size</th></tr></thead><tbody></tbody></table></div>
<div class="pane" id="peer-pane"><div class="pane-head">Peer</div>
<p><label>pinned peer <select id="peer-pick"><option value="">–</option></select></label>
or <label>address <input id="send-to" placeholder="HOST:PORT"></label></p>
<p><label>pairing code (first time only) <input id="send-code" autocomplete="off"></label></p>
<p><button id="send-go" disabled>Send →</button> <span id="send-picked">nothing picked</span></p>
<table id="sends"><thead><tr><th>id</th><th>to</th><th>what</th><th>state</th><th>rate</th></tr></thead><tbody></tbody></table></div>
</div></section>
<section id="paths-view"><h2>Paths</h2><table id="paths"><thead><tr><th>interface</th><th>addresses</th><th>probed path</th><th>capacity</th><th>idle RTT</th><th>added delay (p50)</th></tr></thead><tbody></tbody></table><p id="probe-note" class="none"></p></section>
<section><h2>Pinned peers</h2><table id="peers"><thead><tr><th>label</th><th>key</th><th>paired</th><th>calls itself</th><th></th></tr></thead><tbody></tbody></table></section>
<script src="/app.js"></script>
</body></html>
)HTML";

const char* const kAppCss = R"CSS(
body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
header { display: flex; justify-content: space-between; align-items: flex-start; }
#qr svg { width: 140px; height: 140px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #ddd; }
tr.pick { cursor: pointer; } tr.pick:hover { background: #f4f4f4; }
.transfer { border: 1px solid #ccc; border-radius: 6px; padding: .6em; margin-bottom: 1em; }
.bar { height: 10px; background: #eee; border-radius: 5px; overflow: hidden; margin: .4em 0; }
.bar div { height: 100%; background: #3a7; }
.charts { display: flex; gap: 1em; } .charts div { flex: 1; min-width: 0; height: 220px; }
.none { color: #888; } pre { background: #f7f7f7; max-height: 24em; overflow: auto; }
button { margin-right: .4em; }
.panes { display: flex; gap: 1em; } .pane { flex: 1; min-width: 0; border: 1px solid #ccc; border-radius: 6px; padding: .6em; }
.pane-head { font-weight: 600; margin-bottom: .4em; } #files { max-height: 20em; overflow: auto; display: block; }
#crumbs a { cursor: pointer; color: #06c; }
)CSS";

const char* const kAppJs = R"JS(
'use strict';
const charts = {};  // transfer id -> {rate, rtt, card}
const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
function size(b) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB']; let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : b) + ' ' + u[i];
}
function mbit(bps) { return (bps * 8 / 1e6).toFixed(1) + ' Mbit/s'; }
function secs(s) { return s == null ? '–' : s < 60 ? s.toFixed(1) + ' s' : Math.round(s / 60) + ' min'; }
function el(tag, text) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; }
function row(cells) { const tr = el('tr'); for (const c of cells) tr.appendChild(c instanceof Node ? c : el('td', c)); return tr; }
async function api(path, opts) {
  const r = await fetch(path, Object.assign({credentials: 'same-origin'}, opts || {}));
  return r.json();
}
function series(chart, path, i) {
  let ds = chart.data.datasets.find(d => d.label === path);
  if (!ds) {
    ds = {label: path, data: [], borderColor: colors[i % colors.length], pointRadius: 0, tension: 0.2};
    chart.data.datasets.push(ds);
  }
  return ds;
}
function newChart(canvas, title) {
  return new Chart(canvas, {type: 'line', data: {datasets: []},
    options: {animation: false, maintainAspectRatio: false, parsing: false,
      scales: {x: {type: 'linear', title: {display: true, text: 's'}}, y: {beginAtZero: true, title: {display: true, text: title}}},
      plugins: {title: {display: true, text: title}}}});
}
function card(t) {
  let c = charts[t.id];
  if (c) return c;
  const box = el('div'); box.className = 'transfer'; box.dataset.id = t.id;
  const head = el('div'); const bar = el('div'); bar.className = 'bar'; bar.appendChild(el('div'));
  const row2 = el('div'); row2.className = 'charts';
  const a = el('div'), b = el('div'); const ca = el('canvas'), cb = el('canvas');
  a.appendChild(ca); b.appendChild(cb); row2.append(a, b);
  box.append(head, bar, row2);
  const live = document.getElementById('live');
  live.querySelector('.none')?.remove();
  live.appendChild(box);
  c = charts[t.id] = {box, head, bar, rate: newChart(ca, 'throughput per path (Mbit/s)'), rtt: newChart(cb, 'RTT per path (ms)')};
  return c;
}
function addSamples(t) {
  const c = card(t);
  const pct = t.total ? Math.floor(100 * t.done / t.total) : 100;
  c.head.textContent = `${t.label}  ${pct}%  ${size(t.done)} / ${size(t.total)}  ${mbit(t.rate_bytes_per_sec)}  ETA ${t.ended ? 'done' : secs(t.eta_seconds)}`;
  c.bar.firstChild.style.width = pct + '%';
  for (const s of t.samples) {
    // SSE repeats the latest sample while nothing newer exists (an ended transfer): one point per sample.
    if (c.lastT !== undefined && s.t <= c.lastT) continue;
    c.lastT = s.t;
    s.paths.forEach((p, i) => {
      // w: the seconds the rate was measured over (the tests compare it with the sender's --log).
      series(c.rate, p.path, i).data.push({x: s.t, y: p.rate_bytes_per_sec * 8 / 1e6, w: s.window_s});
      if (p.rtt_ms > 0) series(c.rtt, p.path, i).data.push({x: s.t, y: p.rtt_ms});
    });
  }
  c.rate.update(); c.rtt.update();
}
function showOffers(offers) {
  const tb = document.querySelector('#offers tbody'); tb.replaceChildren();
  for (const o of offers) {
    const act = el('td');
    for (const what of ['accept', 'refuse']) {
      const b = el('button', what); b.dataset.offer = o.id; b.dataset.action = what;
      b.onclick = async () => { await api(`/api/offers/${o.id}/${what}`, {method: 'POST', headers: {'X-Braid': '1'}}); refresh(); };
      act.appendChild(b);
    }
    tb.appendChild(row([String(o.id), o.peer, o.names.join(' ') + (o.entries > o.names.length ? ' …' : ''), size(o.bytes), o.why, act]));
  }
  if (!offers.length) tb.appendChild(row(['', 'none']));
}
async function showHistory() {
  const h = await api('/api/history');
  const tb = document.querySelector('#history tbody'); tb.replaceChildren();
  for (const e of h.transfers.slice().reverse()) {
    const tr = row([String(e.id), new Date(e.time * 1000).toLocaleString(), e.peer, String(e.files), size(e.bytes), secs(e.seconds), mbit(e.rate_bytes_per_sec), e.status]);
    tr.className = 'pick';
    tr.onclick = async () => { document.getElementById('report').textContent = JSON.stringify(await api('/api/history/' + e.id), null, 2); };
    tb.appendChild(tr);
  }
}
async function showPeers() {
  const p = await api('/api/peers');
  const tb = document.querySelector('#peers tbody'); tb.replaceChildren();
  for (const e of p.peers) {
    const act = el('td');
    const post = async (what, params) => {
      const r = await api(`/api/peers/${what}?` + new URLSearchParams(params), {method: 'POST', headers: {'X-Braid': '1'}});
      if (r.error) alert(r.error);
      showPeers();
    };
    const rename = el('button', 'rename');
    rename.onclick = () => { const to = prompt(`New label for '${e.label}'`, e.label); if (to && to !== e.label) post('rename', {label: e.label, to}); };
    const forget = el('button', 'forget');
    forget.onclick = () => { if (confirm(`Forget '${e.label}'? It must pair again with a code.`)) post('forget', {label: e.label}); };
    act.append(rename, forget);
    tb.appendChild(row([e.label, e.key, e.paired || '–', e.host || '–', act]));
  }
}
async function showPairing() {
  const p = await api('/api/pairing');
  document.getElementById('code').textContent = p.code || '(none: pairing closed)';
  document.getElementById('qr').innerHTML = p.qr_svg;  // made by braid serve from the code, not from a peer
}
// The send view: the left pane browses the configured roots (the server
// refuses anything outside them), the right pane names a peer; Send starts
// a real braid send on the server.
const fsView = {root: 0, path: '', picked: new Set()};
function relJoin(a, b) { return a ? a + '/' + b : b; }
async function showRoots() {
  const r = await api('/api/roots');
  const pick = document.getElementById('root-pick'); pick.replaceChildren();
  for (const x of r.roots) { const o = el('option', x.path); o.value = x.id; pick.appendChild(o); }
  pick.onchange = () => { fsView.root = Number(pick.value); fsView.path = ''; fsView.picked.clear(); showFiles(); };
  if (!r.roots.length) { document.querySelector('#files tbody').replaceChildren(row(['', 'no [send] roots in serve.toml'])); return; }
  showFiles();
}
function showPicked() {
  const n = fsView.picked.size;
  document.getElementById('send-picked').textContent = n ? [...fsView.picked].join(', ') : 'nothing picked';
  document.getElementById('send-go').disabled = !n;
}
async function showFiles() {
  const r = await api(`/api/files?root=${fsView.root}&path=${encodeURIComponent(fsView.path)}`);
  const tb = document.querySelector('#files tbody'); tb.replaceChildren();
  const crumbs = document.getElementById('crumbs'); crumbs.replaceChildren();
  const parts = fsView.path ? fsView.path.split('/') : [];
  const top = el('a', '/'); top.onclick = () => { fsView.path = ''; showFiles(); }; crumbs.appendChild(top);
  parts.forEach((p, i) => { const a = el('a', p + '/'); a.onclick = () => { fsView.path = parts.slice(0, i + 1).join('/'); showFiles(); }; crumbs.appendChild(a); });
  if (r.error) { tb.appendChild(row(['', r.error])); return; }
  for (const e of r.entries) {
    const rel = relJoin(fsView.path, e.name);
    const box = el('input'); box.type = 'checkbox'; box.dataset.path = rel; box.checked = fsView.picked.has(rel);
    box.onchange = () => { box.checked ? fsView.picked.add(rel) : fsView.picked.delete(rel); showPicked(); };
    const cell = el('td'); cell.appendChild(box);
    const name = el('td');
    if (e.dir) { const a = el('a', e.name + '/'); a.href = '#'; a.dataset.dir = rel; a.onclick = (ev) => { ev.preventDefault(); fsView.path = rel; showFiles(); }; name.appendChild(a); }
    else name.textContent = e.name;
    tb.appendChild(row([cell, name, e.dir ? '' : size(e.size)]));
  }
  showPicked();
}
async function showPeerPick() {
  const p = await api('/api/peers');
  const pick = document.getElementById('peer-pick');
  const keep = pick.value; pick.replaceChildren(el('option', '–'));
  pick.firstChild.value = '';
  for (const e of p.peers) { const o = el('option', e.label); o.value = e.label; pick.appendChild(o); }
  pick.value = keep;
}
async function startSend() {
  const to = document.getElementById('send-to').value.trim() || document.getElementById('peer-pick').value;
  if (!to) { alert('Pick a pinned peer or type its address'); return; }
  const body = {root: fsView.root, paths: [...fsView.picked], to};
  const code = document.getElementById('send-code').value.trim();
  if (code) body.code = code;
  const r = await api('/api/send', {method: 'POST', headers: {'X-Braid': '1', 'Content-Type': 'application/json'}, body: JSON.stringify(body)});
  if (r.error) { alert(r.error); return; }
  fsView.picked.clear(); showFiles(); showSends();
}
async function showSends() {
  const r = await api('/api/sends');
  const tb = document.querySelector('#sends tbody'); tb.replaceChildren();
  for (const s of r.sends.slice().reverse()) {
    const rate = s.report && s.report.rate_bytes_per_sec ? mbit(s.report.rate_bytes_per_sec) : '';
    const tr = row([String(s.id), s.to, s.paths.join(' '), s.state + (s.state === 'failed' ? ` (${s.exit_code})` : ''), rate]);
    tr.dataset.send = s.id; tr.dataset.state = s.state;
    if (s.output) tr.title = s.output;
    tb.appendChild(tr);
  }
}
// The paths view: every interface with its addresses; beside it, what the
// newest braid probe report measured over the paths leaving it.
async function showPaths() {
  const r = await api('/api/paths');
  const tb = document.querySelector('#paths tbody'); tb.replaceChildren();
  const probed = (r.probe && r.probe.paths) || [];
  const ms = (v) => v == null ? '–' : v.toFixed(2) + ' ms';
  for (const f of r.interfaces) {
    const mine = probed.filter(p => p.interface === f.name);
    const rows = mine.length ? mine : [null];
    rows.forEach((p, i) => {
      const tr = row([i ? '' : f.name + (f.up ? '' : ' (down)'), i ? '' : f.addresses.join(' '),
        p ? p.name : '–', p ? p.capacity_mbit.toFixed(1) + ' Mbit/s' : '–',
        p ? ms(p.idle_rtt_ms) : '–', p ? ms(p.added_delay_p50_ms) : '–']);
      tr.dataset.iface = f.name;
      if (p) { tr.dataset.capacity = p.capacity_mbit; tr.dataset.rtt = p.idle_rtt_ms; tr.dataset.remote = p.remote; }
      tb.appendChild(tr);
    });
  }
  document.getElementById('probe-note').textContent = r.probe
    ? `measured by braid probe (${r.probe.file}, peer '${r.probe.peer}', ${secs(r.probe.age_seconds)} ago)`
    : `no probe yet: braid probe --json ${r.probe_dir}/PEER.json PEER`;
}
async function refresh() { showOffers((await api('/api/offers')).offers); showHistory(); showPeers(); showPairing(); showSends(); showPeerPick(); }
async function main() {
  const live = await api('/api/live');
  for (const t of live.transfers) addSamples(t);
  refresh();
  showRoots(); showPaths();
  document.getElementById('send-go').onclick = startSend;
  setInterval(refresh, 5000);
  setInterval(showSends, 1000);
  setInterval(showPaths, 10000);
  const ev = new EventSource('/api/events');
  ev.addEventListener('live', m => {
    const d = JSON.parse(m.data);
    for (const t of d.transfers) addSamples(t);
    showOffers(d.offers);
  });
}
main();
)JS";

}  // namespace braid::serve
