#include "engine/serve/share_assets.hpp"

namespace braid::serve {

const char* const kShareHtml = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>braid share</title>
<style>
body { font: 15px system-ui, sans-serif; margin: 1em auto; max-width: 60em; padding: 0 1em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; width: 100%; } td { padding: .3em .6em; border-bottom: 1px solid #ddd; }
button { font: inherit; padding: .3em 1em; } .note { color: #666; font-size: .9em; }
</style>
</head>
<body>
<h1>braid share</h1>
<section id="download-part">
<h2>Files</h2>
<table><tbody id="files"></tbody></table>
</section>
<section id="upload-part" hidden>
<h2>Send files to this server</h2>
<p><input type="file" id="pick" multiple> or a folder: <input type="file" id="pick-dir" webkitdirectory></p>
<ul id="uploads"></ul>
</section>
<h2>Addresses of the server</h2>
<p class="note">Chunks travel over every address at once; each chunk is checked with its SHA-256 (<span id="verifier"></span>).</p>
<table><tbody id="lanes"></tbody></table>
<ul id="log"></ul>
<script src="share.js"></script>
</body>
</html>
)HTML";

const char* const kShareJs = R"JS('use strict';
// braid serve --share: downloads (and uploads) over every address of the
// server at once. Each address is a lane with a measured rate; the next
// chunk goes to the lane that would finish it first (a busy fast lane can
// still be the earliest), so a slow address helps in the middle and never
// holds up the end; near the end a chunk still out on a slow lane is asked
// again from an idle faster one, and whichever copy lands first wins. Every
// chunk is checked against the manifest's SHA-256 before it is kept; a bad
// one is fetched again from another address and the address is reported.

// ---- SHA-256 (FIPS 180-4), for plain-HTTP origins: browsers only give
// crypto.subtle to secure contexts (HTTPS, localhost), and a LAN address
// over HTTP is not one. Written here, nothing downloaded.
const SHA_K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);

function sha256Js(bytes) {
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                             0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  const total = bytes.length;
  // The last one or two blocks: the tail, 0x80, zeros, the length in bits (big-endian).
  const tailLen = total % 64;
  const tail = new Uint8Array(tailLen < 56 ? 64 : 128);
  tail.set(bytes.subarray(total - tailLen));
  tail[tailLen] = 0x80;
  const bits = total * 8;
  const tv = new DataView(tail.buffer);
  tv.setUint32(tail.length - 8, Math.floor(bits / 0x100000000));
  tv.setUint32(tail.length - 4, bits >>> 0);
  const block = (src, at) => {
    for (let i = 0; i < 16; i++, at += 4) w[i] = (src[at] << 24) | (src[at + 1] << 16) | (src[at + 2] << 8) | src[at + 3];
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15], b = w[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (k + S1 + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
  };
  for (let at = 0; at + 64 <= total; at += 64) block(bytes, at);
  for (let at = 0; at < tail.length; at += 64) block(tail, at);
  const out = new Uint8Array(32);
  const ov = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) ov.setUint32(4 * i, h[i]);
  return out;
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
const hasWebCrypto = !!(window.crypto && window.crypto.subtle);
async function sha256Hex(buf) {
  if (hasWebCrypto) return hex(new Uint8Array(await crypto.subtle.digest('SHA-256', buf)));
  return hex(sha256Js(new Uint8Array(buf)));
}

// ---- lanes and the scheduler
const DEPTH = 4;           // requests in flight per address (a browser opens up to 6 connections per host)
const RATE_ALPHA = 0.3;    // weight of a new rate sample
const base = location.pathname.replace(/[^/]*$/, '');  // /share/TOKEN/

class Lane {
  constructor(origin) {
    this.origin = origin;
    this.rate = 0;          // bytes per ms, 0 until measured
    this.inflight = new Map();  // key -> {n, bytes, started}
    this.bytes = 0; this.chunks = 0; this.bad = 0; this.errors = 0; this.dead = false;
    this.window = [];       // [time, bytes] of recent completions, for the live figure
  }
  queuedBytes() { let b = 0; for (const r of this.inflight.values()) b += r.bytes; return b; }
  // When a new chunk of `bytes` would be done on this lane, in ms from now.
  finishIn(bytes) {
    if (this.rate <= 0) return this.inflight.size < DEPTH ? 0 : Infinity;  // unmeasured: try it
    return (this.queuedBytes() + bytes) / this.rate;
  }
  liveRate(now) {  // bytes per second over the last 2 s
    this.window = this.window.filter(([t]) => now - t < 2000);
    return this.window.reduce((s, [, b]) => s + b, 0) / 2;
  }
}

// Moves `count` chunks over `lanes`: run(lane, n, signal) resolves to 'ok'
// or 'bad' (failed its hash) or throws (network error). Resolves when every
// chunk is 'ok'; rejects when no lane is left.
function transfer(lanes, count, lengthOf, run, onBad) {
  return new Promise((resolve, reject) => {
    const done = new Array(count).fill(false);
    let left = count;
    const pending = [];
    for (let n = 0; n < count; n++) pending.push(n);
    const avoid = new Map();  // chunk -> lanes that sent it bad
    const copies = new Map(); // chunk -> [{lane, ctrl}]
    if (count === 0) return resolve();

    const send = (lane, n) => {
      const ctrl = new AbortController();
      const key = n + '@' + Math.random();
      const started = performance.now();
      const bytes = lengthOf(n);
      lane.inflight.set(key, {n, bytes, started, depth: lane.inflight.size + 1});
      if (!copies.has(n)) copies.set(n, []);
      copies.get(n).push({lane, ctrl});
      run(lane, n, ctrl.signal).then((verdict) => {
        const now = performance.now();
        const r = lane.inflight.get(key);
        lane.inflight.delete(key);
        copies.set(n, (copies.get(n) || []).filter((c) => c.ctrl !== ctrl));
        if (verdict === 'ok') {
          lane.errors = 0;
          // A request shared the lane with depth-1 others: the lane's rate is depth times its own.
          const sample = (bytes * r.depth) / Math.max(1, now - started);
          lane.rate = lane.rate ? lane.rate * (1 - RATE_ALPHA) + sample * RATE_ALPHA : sample;
          if (!done[n]) {
            done[n] = true; left--;
            lane.bytes += bytes; lane.chunks++; lane.window.push([now, bytes]);
            for (const c of copies.get(n) || []) c.ctrl.abort();  // the other copy lost the race
          }
        } else if (!done[n]) {  // bad: again, elsewhere
          lane.bad++;
          if (!avoid.has(n)) avoid.set(n, new Set());
          avoid.get(n).add(lane);
          if (onBad) onBad(lane, n);
          if (!pending.includes(n) && !(copies.get(n) || []).length) pending.unshift(n);
        }
        if (left === 0) return resolve();
        schedule();
      }).catch((err) => {
        lane.inflight.delete(key);
        copies.set(n, (copies.get(n) || []).filter((c) => c.ctrl !== ctrl));
        if (!ctrl.signal.aborted) {
          if (++lane.errors >= 3) lane.dead = true;
          if (!done[n] && !pending.includes(n) && !(copies.get(n) || []).length) pending.unshift(n);
        }
        if (lanes.every((l) => l.dead)) return reject(new Error('no address of the server answers'));
        schedule();
      });
    };

    const live = () => lanes.filter((l) => !l.dead);
    const schedule = () => {
      // The earliest finisher takes the next chunk; a full lane that would
      // still finish first means wait for it.
      while (pending.length) {
        const n = pending[0];
        const bad = avoid.get(n);
        let choices = live().filter((l) => !bad || !bad.has(l));
        if (!choices.length) choices = live();
        let best = null, bestAt = Infinity;
        for (const l of choices) {
          const at = l.finishIn(lengthOf(n));
          if (at < bestAt) { best = l; bestAt = at; }
        }
        if (!best || best.inflight.size >= DEPTH) break;
        pending.shift();
        send(best, n);
      }
      if (pending.length) return;
      // The end: an idle lane takes a copy of a chunk that another lane
      // would deliver later than this one could.
      const now = performance.now();
      for (const idle of live()) {
        if (idle.inflight.size >= DEPTH || idle.rate <= 0) continue;
        let worst = null, worstLeft = 0;
        for (const l of live()) {
          if (l === idle) continue;
          for (const r of l.inflight.values()) {
            if (done[r.n] || (copies.get(r.n) || []).length > 1) continue;
            const expected = l.rate > 0 ? (r.bytes * r.depth) / l.rate : Infinity;
            const remaining = Math.max(0, r.started + expected - now);
            if (remaining > worstLeft) { worst = r; worstLeft = remaining; }
          }
        }
        if (worst && idle.finishIn(worst.bytes) < worstLeft) send(idle, worst.n);
      }
    };
    schedule();
  });
}

// ---- the page
const $ = (id) => document.getElementById(id);
const state = { lanes: [], downloads: {}, uploads: {}, verifier: hasWebCrypto ? 'WebCrypto' : 'pure-JS SHA-256' };
window.braidShare = state;  // what the page knows, for the curious (and the browser test)
let api = null;

function mb(bytes) { return (bytes / 1048576).toFixed(1) + ' MiB'; }

function drawLanes() {
  const now = performance.now();
  const rows = state.lanes.map((l) => {
    const tr = document.createElement('tr');
    for (const v of [l.origin, l.chunks, mb(l.bytes), (l.liveRate(now) * 8 / 1e6).toFixed(1) + ' Mbit/s',
                     l.bad ? l.bad + ' bad' : '', l.dead ? 'not answering' : ''])
      tr.appendChild(document.createElement('td')).textContent = v;
    return tr;
  });
  $('lanes').replaceChildren(...rows);
}
setInterval(drawLanes, 500);

function report(lane, file, n) {
  const msg = 'chunk ' + n + ' from ' + lane.origin + ' failed its SHA-256: fetched again from another address';
  log(msg);
  fetch(base + 'report?address=' + encodeURIComponent(lane.origin) + '&file=' + file + '&chunk=' + n,
        { method: 'POST' }).catch(() => {});
}

function log(msg) {
  const li = document.createElement('li');
  li.textContent = msg;
  $('log').appendChild(li);
}

async function download(file) {
  const size = file.size, cs = api.chunk_size;
  const d = { name: file.name, size, done: false, error: null, started: performance.now() };
  state.downloads[file.id] = d;
  const status = $('status-' + file.id);
  // A large file goes straight to disk when the browser lets a page write
  // one (File System Access API: Chromium); otherwise it is held in memory
  // as a Blob, which a browser caps at a few GiB (less on a phone).
  let writable = null, parts = null;
  if (size > (1 << 30) && window.showSaveFilePicker) {
    const handle = await window.showSaveFilePicker({ suggestedName: file.name.split('/').pop() });
    writable = await handle.createWritable();
  } else {
    parts = new Array(file.chunks.length);
  }
  let got = 0;
  const lengthOf = (n) => Math.min(cs, size - n * cs);
  const run = async (lane, n, signal) => {
    const res = await fetch(lane.origin + base + 'f/' + file.id + '/chunk/' + n, { signal, cache: 'no-store' });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    const buf = await res.arrayBuffer();
    if (buf.byteLength !== lengthOf(n) || (await sha256Hex(buf)) !== file.chunks[n]) return 'bad';
    if (parts) { if (!parts[n]) { parts[n] = buf; got += buf.byteLength; } }
    else { await writable.write({ type: 'write', position: n * cs, data: buf }); got += buf.byteLength; }
    status.textContent = mb(got) + ' of ' + mb(size);
    return 'ok';
  };
  try {
    await transfer(state.lanes, file.chunks.length, lengthOf, run, (lane, n) => report(lane, file.id, n));
  } catch (e) {
    d.error = e.message; status.textContent = 'failed: ' + e.message; return;
  }
  d.seconds = (performance.now() - d.started) / 1000;
  if (writable) {
    await writable.close();
    status.textContent = 'saved, ' + mb(size) + ' in ' + d.seconds.toFixed(1) + ' s';
  } else {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob(parts, { type: 'application/octet-stream' }));
    a.download = file.name.split('/').pop();
    a.textContent = 'save ' + a.download;
    status.replaceChildren(mb(size) + ' in ' + d.seconds.toFixed(1) + ' s, every chunk verified: ', a);
    a.click();
  }
  d.done = true;
}

async function upload(f) {
  const cs = api.chunk_size, size = f.size, count = Math.ceil(size / cs);
  const name = f.webkitRelativePath || f.name;
  const u = { name, size, done: false, error: null };
  state.uploads[name] = u;
  const li = $('uploads').appendChild(document.createElement('li'));
  const say = (t) => { li.textContent = name + ': ' + t; };
  const chunks = [];
  for (let n = 0; n < count; n++) {  // the hashes first: serve checks every chunk against them
    chunks.push(await sha256Hex(await f.slice(n * cs, Math.min(size, (n + 1) * cs)).arrayBuffer()));
    say('hashing, ' + mb(Math.min(size, (n + 1) * cs)));
  }
  const start = await fetch(base + 'upload', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                               body: JSON.stringify({ name, size, chunks }) });
  const started = await start.json();
  if (!start.ok) { u.error = started.error; say('refused: ' + started.error); return; }
  let sent = 0;
  const lengthOf = (n) => Math.min(cs, size - n * cs);
  const run = async (lane, n, signal) => {
    const body = await f.slice(n * cs, n * cs + lengthOf(n)).arrayBuffer();
    const res = await fetch(lane.origin + base + 'upload/' + started.id + '/chunk/' + n,
                            { method: 'PUT', body, signal, headers: { 'Content-Type': 'application/octet-stream' } });
    if (res.status === 422) return 'bad';
    if (!res.ok) throw new Error('HTTP ' + res.status);
    sent += body.byteLength;
    say(mb(Math.min(sent, size)) + ' of ' + mb(size));
    return 'ok';
  };
  try {
    await transfer(state.lanes, count, lengthOf, run, (lane, n) => log('chunk ' + n + ' reached serve corrupted over ' + lane.origin + ': sent again'));
  } catch (e) { u.error = e.message; say('failed: ' + e.message); return; }
  u.done = true;
  say('uploaded, ' + mb(size) + ', every chunk verified by serve');
}

async function main() {
  const res = await fetch(base + 'api', { cache: 'no-store' });
  api = await res.json();
  state.api = api;
  state.lanes = api.addresses.map((o) => new Lane(o));
  $('verifier').textContent = state.verifier + (hasWebCrypto ? '' : ' (plain HTTP: WebCrypto needs HTTPS)');
  const rows = api.files.map((f) => {
    const tr = document.createElement('tr');
    tr.appendChild(document.createElement('td')).textContent = f.name;
    tr.appendChild(document.createElement('td')).textContent = mb(f.size);
    const b = tr.appendChild(document.createElement('td')).appendChild(document.createElement('button'));
    b.textContent = 'download';
    b.onclick = () => { b.disabled = true; download(f); };
    const s = tr.appendChild(document.createElement('td'));
    s.id = 'status-' + f.id;
    return tr;
  });
  $('files').replaceChildren(...rows);
  if (!api.files.length) $('download-part').hidden = true;
  $('upload-part').hidden = !api.upload;
  $('pick').onchange = async (e) => { for (const f of e.target.files) await upload(f); };
  $('pick-dir').onchange = async (e) => { for (const f of e.target.files) await upload(f); };
  drawLanes();
  // #get=ID: a link straight to one file's download.
  const m = /^#get=(\d+)$/.exec(location.hash);
  if (m && api.files[+m[1]]) download(api.files[+m[1]]);
}
main().catch((e) => log('cannot read the share: ' + e.message));
)JS";

}  // namespace braid::serve
