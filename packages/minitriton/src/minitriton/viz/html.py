"""The HTML report of a trace: one self-contained file (its CSS, script and data inline; no
server, no network), opened from disk in any browser.

A program selector and a step slider (the selected program's memory operations in order, each
at a kernel line); every argument drawn in its shape, coloured by the program that wrote it
(or read it); the cells the selected program touched up to the current step highlighted
(class `hl`), those of the current step outlined (`cur`); hover shows the element's index,
value and the programs that read, wrote or updated it; the kernel source beside it with the
current line highlighted; with Settings.sectors, the per-line memory table (`record.lines`).

Arguments of more than CELL_LIMIT elements show their first CELL_LIMIT (and say so).
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from .pictures import panels

CELL_LIMIT = 16384
STRIP = 64  # a 1-D argument is drawn in rows of this many elements
LINE_KEYS = ("line", "kind", "elements", "bytes", "sectors", "efficiency", "unique_bytes")


def _value_text(values):
    if values.dtype.kind in "iub":
        return [str(int(v)) for v in values]
    return [f"{float(v):.6g}" for v in values.astype(np.float64)]


def _columns(arg, masked, shown):
    idx = arg.masked_index if masked else arg.index
    keep = (idx >= 0) & (idx < shown)
    prog = arg.masked_program if masked else arg.program
    step = arg.masked_step if masked else arg.step
    site = arg.masked_site if masked else arg.site
    kind = arg.masked_kind if masked else arg.kind
    return {"p": prog[keep].tolist(), "s": step[keep].tolist(), "i": idx[keep].tolist(),
            "l": site[keep].tolist(), "k": kind[keep].tolist()}


def _line_rows(record):
    rows = getattr(record, "lines", None) if record is not None else None
    if not rows:
        return None
    out = []
    for row in rows:
        get = row.get if isinstance(row, dict) else (lambda k, r=row: getattr(r, k, None))
        out.append({k: _plain(get(k)) for k in LINE_KEYS})
    return out


def _plain(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if not np.isfinite(v) else round(float(v), 4)
    return v if v is None or isinstance(v, (int, str)) else str(v)


def report_data(trace):
    """The report's data (what the page's script reads), as plain JSON-able values."""
    args = []
    for name, arg in trace.args.items():
        if not len(arg) and not arg.masked_count():
            continue
        shown = min(arg.numel, CELL_LIMIT)
        layout = panels(arg.shape if len(arg.shape) <= 2 else
                        (int(np.prod(arg.shape[:-1], dtype=np.int64)), arg.shape[-1]))[0][1]
        cols = int(layout.shape[1]) if len(arg.shape) > 1 else STRIP  # 1-D: wrapped
        args.append({"name": name, "dtype": arg.dtype, "shape": list(arg.shape),
                     "numel": arg.numel, "shown": shown, "cols": cols,
                     "values": _value_text(arg.values[:shown]),
                     "acc": _columns(arg, False, shown), "masked": _columns(arg, True, shown),
                     "races": np.nonzero(arg.races()[:shown])[0].tolist()})
    return {"kernel": trace.kernel, "grid": list(trace.grid), "programs": trace.num_programs,
            "executor": trace.executor,
            "pids": [list(trace.pid_of(p)) for p in range(trace.num_programs)],
            "sites": [{"file": s.file, "line": s.line, "text": s.text} for s in trace.sites],
            "source": [{"file": b.file, "first": b.first_line, "lines": b.lines,
                        "function": b.function} for b in trace.source],
            "args": args, "lines": _line_rows(trace.record)}


def html_report(trace, path):
    """Write the report of one trace to `path` (an .html file); returns the path."""
    data = json.dumps(report_data(trace), separators=(",", ":"))
    data = data.replace("</", "<\\/")  # never closes the script element early
    page = (_PAGE.replace("%TITLE%", html.escape(f"{trace.kernel}: minitriton trace"))
            .replace("%CSS%", _CSS).replace("%SCRIPT%", _SCRIPT).replace("%DATA%", data))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%TITLE%</title>
<style>%CSS%</style></head>
<body>
<header><h1 id="title"></h1><div id="subtitle"></div></header>
<div id="controls">
  <label>program <select id="program"></select></label>
  <label>step <input id="step" type="range" min="0" max="0" value="0"></label>
  <span id="stepinfo"></span>
</div>
<main>
  <section id="grids"></section>
  <aside><h2>kernel source</h2><div id="source"></div><div id="lines"></div></aside>
</main>
<div id="tip"></div>
<script id="data" type="application/json">%DATA%</script>
<script>%SCRIPT%</script>
</body></html>
"""

_CSS = """
body { font: 13px system-ui, sans-serif; margin: 12px; color: #222; }
h1 { font-size: 17px; margin: 0; } h2 { font-size: 14px; margin: 8px 0 4px; }
h3 { font-size: 13px; margin: 10px 0 4px; font-weight: 600; }
#subtitle { color: #666; margin: 2px 0 8px; }
#controls { position: sticky; top: 0; background: #fff; padding: 6px 0; z-index: 2;
  border-bottom: 1px solid #ddd; display: flex; gap: 16px; align-items: center; }
#step { width: 260px; }
main { display: flex; gap: 18px; align-items: flex-start; }
#grids { flex: 1 1 auto; min-width: 0; overflow-x: auto; }
aside { flex: 0 0 42%; max-width: 42%; }
.grid { display: grid; gap: 1px; background: #fff; width: max-content; max-width: 100%; }
.cell { width: 10px; height: 10px; background: #eee; box-sizing: border-box; }
.cell.masked { background-image: repeating-linear-gradient(45deg, #666 0 1px, transparent 1px 4px); }
.cell.race { outline: 2px solid #d62728; outline-offset: -2px; }
.dim .cell { opacity: 0.25; }
.dim .cell.hl { opacity: 1; }
.cell.cur { outline: 2px solid #000; outline-offset: -2px; }
.note { color: #666; font-size: 12px; }
pre { margin: 0; font: 12px ui-monospace, monospace; background: #f7f7f7; padding: 6px;
  overflow-x: auto; }
pre .ln { color: #999; display: inline-block; width: 3.5em; }
pre .src { display: block; }
pre .src.touch { background: #eef3ff; }
pre .src.current { background: #ffe58a; }
table { border-collapse: collapse; margin-top: 6px; font-size: 12px; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
#tip { position: fixed; pointer-events: none; background: #222; color: #fff; padding: 4px 6px;
  border-radius: 3px; font-size: 12px; display: none; z-index: 3; white-space: pre; }
"""

_SCRIPT = r"""
const D = JSON.parse(document.getElementById('data').textContent);
const PALETTE = ['#1f77b4','#ff7f0e','#2ca02c','#d62728','#9467bd','#8c564b','#e377c2',
  '#7f7f7f','#bcbd22','#17becf','#aec7e8','#ffbb78','#98df8a','#ff9896','#c5b0d5','#c49c94',
  '#f7b6d2','#c7c7c7','#dbdb8d','#9edae5'];
const KINDS = ['load', 'store', 'atomic'];
const pidText = p => D.pids[p].length === 1 ? String(D.pids[p][0]) : '(' + D.pids[p].join(', ') + ')';
document.getElementById('title').textContent = D.kernel + ': who touched what';
document.getElementById('subtitle').textContent = 'grid (' + D.grid.join(', ') + ') = ' +
  D.programs + ' programs, ' + D.executor + ' executor; recorded by minitriton (Settings.trace)';

// per argument: who touched each element, the owner colour, the cells
const cells = [];
for (const a of D.args) {
  a.touch = Array.from({length: a.shown}, () => [new Set(), new Set(), new Set()]);
  a.owner = new Int32Array(a.shown).fill(-1);
  a.reader = new Int32Array(a.shown).fill(-1);
  for (let j = 0; j < a.acc.p.length; j++) {
    const i = a.acc.i[j], p = a.acc.p[j], k = a.acc.k[j];
    a.touch[i][k].add(p);
    if (k !== 0) a.owner[i] = p; else if (a.reader[i] < 0) a.reader[i] = p;
  }
  a.written = a.acc.k.some(k => k !== 0);
  const sec = document.createElement('div');
  const h = document.createElement('h3');
  h.textContent = a.name + '  ' + a.dtype + ' (' + a.shape.join(', ') + ')  coloured by the program that ' +
    (a.written ? 'wrote' : 'read') + ' each element';
  sec.appendChild(h);
  if (a.shown < a.numel) {
    const n = document.createElement('div'); n.className = 'note';
    n.textContent = 'first ' + a.shown + ' of ' + a.numel + ' elements shown'; sec.appendChild(n);
  }
  const g = document.createElement('div'); g.className = 'grid';
  g.style.gridTemplateColumns = 'repeat(' + Math.min(a.cols, a.shown) + ', 10px)';
  const masked = new Set(a.masked.i), races = new Set(a.races);
  a.cells = [];
  for (let i = 0; i < a.shown; i++) {
    const c = document.createElement('div'); c.className = 'cell';
    const who = a.written ? a.owner[i] : a.reader[i];
    if (who < 0 && a.written && a.reader[i] >= 0) c.style.background = '#ccc';
    else if (who >= 0) c.style.backgroundColor = PALETTE[who % 20];
    if (masked.has(i)) c.classList.add('masked');
    if (races.has(i)) c.classList.add('race');
    c.dataset.arg = D.args.indexOf(a); c.dataset.i = i;
    g.appendChild(c); a.cells.push(c);
  }
  a.grid = g; sec.appendChild(g);
  document.getElementById('grids').appendChild(sec);
}

// the source, and which lines touched memory
const siteLines = new Set(D.sites.map(s => s.file + ':' + s.line));
const srcLines = {};
for (const b of D.source) {
  const h = document.createElement('div'); h.className = 'note';
  h.textContent = b.function + '  (' + b.file + ')';
  const pre = document.createElement('pre');
  b.lines.forEach((text, j) => {
    const n = b.first + j, span = document.createElement('span');
    span.className = 'src' + (siteLines.has(b.file + ':' + n) ? ' touch' : '');
    const ln = document.createElement('span'); ln.className = 'ln'; ln.textContent = n;
    span.appendChild(ln); span.appendChild(document.createTextNode(text));
    pre.appendChild(span); srcLines[b.file + ':' + n] = span;
  });
  const src = document.getElementById('source'); src.appendChild(h); src.appendChild(pre);
}
if (D.lines) {
  const keys = ['line', 'kind', 'elements', 'bytes', 'sectors', 'efficiency', 'unique_bytes'];
  const t = document.createElement('table'); t.id = 'linetable';
  t.innerHTML = '<tr>' + keys.map(k => '<th>' + k + '</th>').join('') + '</tr>';
  for (const r of D.lines) {
    const tr = document.createElement('tr');
    for (const k of keys) { const td = document.createElement('td');
      td.textContent = r[k] === null || r[k] === undefined ? '' : r[k]; tr.appendChild(td); }
    t.appendChild(tr);
  }
  const h = document.createElement('h2'); h.textContent = 'memory per kernel line (Settings.sectors)';
  document.getElementById('lines').appendChild(h); document.getElementById('lines').appendChild(t);
}

// the program selector and the step slider
const sel = document.getElementById('program'), slider = document.getElementById('step');
sel.add(new Option('all programs', '-1'));
for (let p = 0; p < D.programs; p++) sel.add(new Option(pidText(p), String(p)));
function stepsOf(p) {  // step -> site, for program p
  const out = new Map();
  for (const a of D.args) for (const c of [a.acc, a.masked])
    for (let j = 0; j < c.p.length; j++) if (c.p[j] === p) out.set(c.s[j], c.l[j]);
  return out;
}
let steps = new Map();
function render() {
  const p = Number(sel.value), s = Number(slider.value);
  document.querySelectorAll('.cell.hl, .cell.cur').forEach(c => c.classList.remove('hl', 'cur'));
  document.querySelectorAll('.src.current').forEach(e => e.classList.remove('current'));
  const info = document.getElementById('stepinfo');
  for (const a of D.args) a.grid.classList.toggle('dim', p >= 0);
  if (p < 0) { info.textContent = 'select a program to follow it step by step'; return; }
  for (const a of D.args) {
    const c = a.acc;
    for (let j = 0; j < c.p.length; j++) {
      if (c.p[j] !== p || c.s[j] > s) continue;
      a.cells[c.i[j]].classList.add('hl');
      if (c.s[j] === s) a.cells[c.i[j]].classList.add('cur');
    }
  }
  const site = D.sites[steps.get(s)];
  if (site) {
    const line = srcLines[site.file + ':' + site.line];
    if (line) line.classList.add('current');
    info.textContent = 'step ' + s + ' of ' + (steps.size - 1) + ': line ' + site.line + ': ' + site.text;
  } else info.textContent = 'program ' + pidText(p) + ' touched no memory';
}
sel.addEventListener('change', () => {
  const p = Number(sel.value);
  steps = p >= 0 ? stepsOf(p) : new Map();
  slider.max = String(Math.max(0, steps.size - 1)); slider.value = slider.max;
  render();
});
slider.addEventListener('input', render);
render();

// hover: index, value, who touched it
const tip = document.getElementById('tip');
function indexText(a, i) {
  const idx = []; let r = i;
  for (let d = a.shape.length - 1; d >= 0; d--) { idx.unshift(r % a.shape[d]); r = Math.floor(r / a.shape[d]); }
  return '[' + idx.join(', ') + ']';
}
document.getElementById('grids').addEventListener('mousemove', e => {
  const c = e.target.closest('.cell');
  if (!c) { tip.style.display = 'none'; return; }
  const a = D.args[Number(c.dataset.arg)], i = Number(c.dataset.i), t = a.touch[i];
  const names = s => s.size ? [...s].sort((x, y) => x - y).map(pidText).join(' ') : '-';
  tip.textContent = a.name + indexText(a, i) + ' (element ' + i + ') = ' + a.values[i] +
    '\nread by ' + names(t[0]) + '\nwritten by ' + names(t[1]) +
    (t[2].size ? '\natomics by ' + names(t[2]) : '') +
    (c.classList.contains('masked') ? '\naddressed by a masked-off lane' : '') +
    (c.classList.contains('race') ? '\nRACE: a plain store and another program' : '');
  tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';
  tip.style.display = 'block';
});
document.getElementById('grids').addEventListener('mouseleave', () => { tip.style.display = 'none'; });
"""
