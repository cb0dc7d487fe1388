"""The HTML report of a trace: one self-contained file (its CSS, script and data inline; no
server, no network), opened from disk in any browser.

A program selector and a step slider (the selected program's memory operations in order, each
at a kernel line); every argument drawn in its shape, coloured by the program that wrote it
(or read it); the cells the selected program touched up to the current step highlighted
(class `hl`), those of the current step outlined (`cur`); hover shows the element's index,
value and the programs that read, wrote or updated it; the kernel source beside it with the
current line highlighted; with Settings.sectors, the per-line memory table (`record.lines`).

A legend says which colour is which program (the palette repeats every 20 programs), and a
black corner marks the elements that several programs read (or, in an argument written, wrote):
the colour is one of them, the hover names them all. A launch that failed (its trace's
`failure`) opens on the failing program, says what stopped it above the map, and outlines the
elements of the failing access in red (its last step on the slider).

Arguments of more than CELL_LIMIT elements show their first CELL_LIMIT (and say so).
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from .pictures import _n, panels

CELL_LIMIT = 16384
STRIP = 64  # a 1-D argument is drawn in rows of this many elements
LINE_KEYS = ("line", "kind", "elements", "bytes", "sectors", "efficiency", "unique_bytes")
LEGEND_PROGRAMS = 40  # programs the legend lists by name
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
           "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]


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


def _pid_text(trace, p):
    pid = trace.pid_of(p)
    return f"program {pid[0]}" if len(pid) == 1 else f"program ({', '.join(map(str, pid))})"


def _argument(trace, name, arg):
    """One argument's entry: its cells' data, who colours them, its heading."""
    shown = min(arg.numel, CELL_LIMIT)
    layout = panels(arg.shape if len(arg.shape) <= 2 else
                    (int(np.prod(arg.shape[:-1], dtype=np.int64)), arg.shape[-1]))[0][1]
    cols = int(layout.shape[1]) if len(arg.shape) > 1 else STRIP  # 1-D: wrapped
    written = arg.written
    several = arg.several_writers() if written else arg.several_readers()
    most = int((arg.writers() if written else arg.readers()).max()) if several.any() else 1
    heading = (f"{name}  {arg.dtype} ({', '.join(map(str, arg.shape))}): coloured by the "
               f"program that {'wrote' if written else 'read'} each element "
               f"({'last writer' if written else 'first reader'})")
    if several.any():
        heading += (f"; {_n(int(several.sum()), 'element')} {'written' if written else 'read'}"
                    f" by several programs (up to {most}), marked with a black corner")
    grey = bool(written and ((arg.writer() < 0) & (arg.reader() >= 0))[:shown].any())
    return {"name": name, "dtype": arg.dtype, "shape": list(arg.shape), "numel": arg.numel,
            "grey": grey,
            "shown": shown, "cols": cols, "values": _value_text(arg.values[:shown]),
            "acc": _columns(arg, False, shown), "masked": _columns(arg, True, shown),
            "races": np.nonzero(arg.races()[:shown])[0].tolist(),
            "several": np.nonzero(several[:shown])[0].tolist(), "most": most,
            "heading": heading}


def _legend(trace):
    """The programs that colour an element of the map (each argument's owner), with their
    colours."""
    owners = set()
    for arg in trace.args.values():
        owner = arg.writer() if arg.written else arg.reader()
        owners.update(int(p) for p in np.unique(owner[owner >= 0]))
    return [{"program": p, "label": _pid_text(trace, p), "colour": PALETTE[p % len(PALETTE)]}
            for p in sorted(owners)]


def _failure(trace):
    f = trace.failure
    if f is None:
        return None
    return {"text": str(f), "headline": f.headline(), "error": f.error, "program": f.program,
            "step": f.step, "arg": f.arg, "kind": f.kind,
            "offsets": [int(o) for o in f.offsets], "index": [int(i) for i in f.index],
            "site": None if f.site is None else {"file": f.site.file, "line": f.site.line,
                                                 "text": f.site.text}}


def report_data(trace):
    """The report's data (what the page's script reads), as plain JSON-able values."""
    failed = trace.failure is not None
    args = [_argument(trace, name, arg) for name, arg in trace.args.items()
            if len(arg) or arg.masked_count() or (failed and trace.failure.arg == name)]
    n = trace.num_programs
    subtitle = (f"grid ({', '.join(map(str, trace.grid))}) = {_n(n, 'program')}, "
                f"{trace.executor} executor; recorded by minitriton (Settings.trace)")
    return {"kernel": trace.kernel, "grid": list(trace.grid), "programs": n,
            "executor": trace.executor, "title": f"{trace.kernel}: who touched what" +
            (" (up to the error that stopped it)" if failed else ""), "subtitle": subtitle,
            "pids": [list(trace.pid_of(p)) for p in range(n)],
            "sites": [{"file": s.file, "line": s.line, "text": s.text} for s in trace.sites],
            "source": [{"file": b.file, "first": b.first_line, "lines": b.lines,
                        "function": b.function} for b in trace.source],
            "args": args, "lines": _line_rows(trace.record), "palette": PALETTE,
            "legend": _legend(trace), "failure": _failure(trace)}


def _legend_html(data):
    """The legend, as static HTML: each program's colour, then the marks."""
    def swatch(style="", cls=""):
        return f'<span class="swatch {cls}" style="{style}"></span>'

    items = [f'<span class="item">{swatch("background-color:" + e["colour"])}'
             f'{html.escape(e["label"])}</span>' for e in data["legend"][:LEGEND_PROGRAMS]]
    more = len(data["legend"]) - LEGEND_PROGRAMS
    if more > 0:
        items.append(f'<span class="item">... and {_n(more, "more program")}</span>')
    if data["programs"] > len(PALETTE):
        items.append(f'<span class="item note">colours repeat every {len(PALETTE)} '
                     f'programs</span>')
    args = data["args"]
    marks = [(swatch("background:#eee"), "untouched", True),
             (swatch("background:#ccc"), "read, not written (in an argument that is written)",
              any(a["grey"] for a in args)),
             (swatch("background-color:#bbb", "several"), "read (or written) by several "
              "programs: one colour, the hover names them all", any(a["several"] for a in args)),
             (swatch("", "masked"), "addressed by a masked-off lane",
              any(a["masked"]["i"] for a in args)),
             (swatch("background:#eee", "race"), "race", any(a["races"] for a in args)),
             (swatch("background:#eee", "cur"), "the selected program's current step", True),
             (swatch("background:#eee", "bad"), "the failing access",
              data["failure"] is not None and data["failure"]["arg"] is not None)]
    marks = [(mark, text) for mark, text, shown in marks if shown]
    items += [f'<span class="item">{s}{html.escape(text)}</span>' for s, text in marks]
    return "<b>colour: the program</b> " + " ".join(items)


def html_report(trace, path):
    """Write the report of one trace to `path` (an .html file); returns the path."""
    content = report_data(trace)
    data = json.dumps(content, separators=(",", ":"))
    data = data.replace("</", "<\\/")  # never closes the script element early
    failure = "" if content["failure"] is None else \
        f'<pre id="failure">{html.escape(content["failure"]["text"])}</pre>'
    page = (_PAGE.replace("%TITLE%", html.escape(f"{trace.kernel}: minitriton trace"))
            .replace("%H1%", html.escape(content["title"]))
            .replace("%SUBTITLE%", html.escape(content["subtitle"]))
            .replace("%FAILURE%", failure).replace("%LEGEND%", _legend_html(content))
            .replace("%CSS%", _CSS).replace("%SCRIPT%", _SCRIPT).replace("%DATA%", data))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%TITLE%</title>
<style>%CSS%</style></head>
<body>
<header><h1 id="title">%H1%</h1><div id="subtitle">%SUBTITLE%</div></header>
%FAILURE%
<div id="controls">
  <label>program <select id="program"></select></label>
  <label>step <input id="step" type="range" min="0" max="0" value="0"></label>
  <span id="stepinfo"></span>
</div>
<div id="legend">%LEGEND%</div>
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
.cell, .swatch { width: 10px; height: 10px; background: #eee; box-sizing: border-box; }
.masked { background-image: repeating-linear-gradient(45deg, #666 0 1px, transparent 1px 4px); }
.race { outline: 2px solid #d62728; outline-offset: -2px; }
.dim .cell { opacity: 0.25; }
.dim .cell.hl { opacity: 1; }
.cur { outline: 2px solid #000; outline-offset: -2px; }
.several { background-image: linear-gradient(135deg, #000 0 3px, transparent 3px); }
.bad { outline: 2px solid #e00000; outline-offset: -2px; }
#failure { background: #fff0f0; border: 1px solid #e00000; color: #900; white-space: pre-wrap; }
#legend { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; padding: 6px 0;
  font-size: 12px; }
#legend .item { display: inline-flex; align-items: center; gap: 4px; }
#legend .swatch { display: inline-block; }
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
const PALETTE = D.palette;
const KINDS = ['load', 'store', 'atomic'];
const pidText = p => D.pids[p].length === 1 ? String(D.pids[p][0]) : '(' + D.pids[p].join(', ') + ')';
const F = D.failure;

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
  h.textContent = a.heading;
  sec.appendChild(h);
  if (a.shown < a.numel) {
    const n = document.createElement('div'); n.className = 'note';
    n.textContent = 'first ' + a.shown + ' of ' + a.numel + ' elements shown'; sec.appendChild(n);
  }
  const g = document.createElement('div'); g.className = 'grid';
  g.style.gridTemplateColumns = 'repeat(' + Math.min(a.cols, a.shown) + ', 10px)';
  const masked = new Set(a.masked.i), races = new Set(a.races), several = new Set(a.several);
  const bad = new Set(F && F.arg === a.name ? F.index.filter(i => i >= 0) : []);
  a.cells = [];
  for (let i = 0; i < a.shown; i++) {
    const c = document.createElement('div'); c.className = 'cell';
    const who = a.written ? a.owner[i] : a.reader[i];
    if (who < 0 && a.written && a.reader[i] >= 0) c.style.backgroundColor = '#ccc';
    else if (who >= 0) c.style.backgroundColor = PALETTE[who % 20];
    if (masked.has(i)) c.classList.add('masked');
    if (races.has(i)) c.classList.add('race');
    if (several.has(i)) c.classList.add('several');
    if (bad.has(i)) c.classList.add('bad');
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
  if (F && p === F.program && s === F.step) {
    const line = F.site && srcLines[F.site.file + ':' + F.site.line];
    if (line) line.classList.add('current');
    for (const a of D.args) if (a.name === F.arg)
      for (const i of F.index) if (i >= 0 && i < a.shown) a.cells[i].classList.add('hl', 'cur');
    info.textContent = 'step ' + s + ' of ' + (steps.size - 1) + ': ' + F.headline;
    return;
  }
  const site = D.sites[steps.get(s)];
  if (site) {
    const line = srcLines[site.file + ':' + site.line];
    if (line) line.classList.add('current');
    info.textContent = 'step ' + s + ' of ' + (steps.size - 1) + ': line ' + site.line + ': ' + site.text;
  } else info.textContent = 'program ' + pidText(p) + ' touched no memory';
}
function select() {
  const p = Number(sel.value);
  steps = p >= 0 ? stepsOf(p) : new Map();
  if (F && p === F.program) steps.set(F.step, -1);  // the step it stopped at
  slider.max = String(Math.max(0, steps.size - 1)); slider.value = slider.max;
  render();
}
sel.addEventListener('change', select);
slider.addEventListener('input', render);
if (F && F.program !== null) sel.value = String(F.program);  // open on the failing program
select();

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
    (c.classList.contains('race') ? '\nRACE: a plain store and another program' : '') +
    (c.classList.contains('bad') ? '\nthe failing ' + (F.kind || 'access') + ' (' + F.error +
                                   ')' : '');
  tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px';
  tip.style.display = 'block';
});
document.getElementById('grids').addEventListener('mouseleave', () => { tip.style.display = 'none'; });
"""
