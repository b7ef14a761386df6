// The script of the `git agent-rewind view` page. It reads the JSON embedded in the
// application/json script element #data and builds the page with DOM calls only
// (createElement / textContent / setAttribute): nothing read from the data is ever parsed
// as HTML. No dependencies; no network, except (when `view --serve` served the page, D.blame)
// asking that server for the attribution of a file a person clicked.
(function () {
  'use strict';
  // The controller of the listeners of the page's current build: a live page (served by
  // `view --serve`, D.live) is built again from newer data, and the listeners the previous
  // build put on the elements that stay (the search box, the graph, the document) go with it.
  var generation = null;
  function build(D, keep) {
    if (generation) generation.abort();
    generation = new AbortController();
    var on = { signal: generation.signal };
    ['problems', 'graph', 'results', 'detail'].forEach(function (id) { document.getElementById(id).replaceChildren(); });
    var S = D.strings;
    // A checkpoint row: [id, run, seq, step, attempt, event, kind, status, ts, parent, session,
    // writer, git_commit_sha, head_ref, started_at, finished_at]; strings are indexes into S,
    // -1 for none; times are milliseconds after D.base (null for none).
    var ID = 0, RUN = 1, SEQ = 2, STEP = 3, ATT = 4, EV = 5, KIND = 6, ST = 7, TS = 8,
      PAR = 9, SES = 10, WR = 11, SHA = 12, REF = 13, STARTED = 14, FINISHED = 15;
    // LABEL: the caption column, left of every dot and edge; CAPTION_X: where captions start.
    var DX = 22, DY = 30, LABEL = 320, CAPTION_X = 22, R = 6, SVGNS = 'http://www.w3.org/2000/svg';
    var cps = D.cps, runs = D.runs;
    // The box's own state, so a page reloaded with it ticked (the browser keeps it) shows
    // the archived runs too.
    var sel = -1, hits = null, showArchived = document.getElementById('archived').checked;
    function $(id) { return document.getElementById(id); }
    function s(i) { return i == null || i < 0 ? null : S[i]; }
    function ts(i) { return D.base + cps[i][TS]; }
    function el(tag, cls, text) {
      var e = document.createElement(tag);
      if (cls) e.className = cls;
      if (text != null) e.textContent = String(text);
      return e;
    }
    function sv(tag, attrs, cls) {
      var e = document.createElementNS(SVGNS, tag);
      for (var k in attrs) e.setAttribute(k, String(attrs[k]));
      if (cls) e.setAttribute('class', cls);
      return e;
    }
    function iso(ms) { return new Date(ms).toISOString(); }
    function ago(ms) {
      var d = (Date.now() - ms) / 1000, u = [[86400 * 365, 'y'], [86400, 'd'], [3600, 'h'], [60, 'min']];
      for (var k = 0; k < u.length; k++) if (d >= u[k][0]) return Math.floor(d / u[k][0]) + ' ' + u[k][1] + ' ago';
      return d < 0 ? 'in the future' : 'just now';
    }
    function dur(ms) {
      if (ms < 1000) return ms + ' ms';
      if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
      if (ms < 3600000) return Math.round(ms / 60000) + ' min';
      return (ms / 3600000).toFixed(1) + ' h';
    }
    // "1 run", "2 runs": a count and its noun, singular for one.
    function plural(n, noun) { return n + ' ' + noun + (n === 1 ? '' : 's'); }
    function statusOf(i) { return s(cps[i][ST]) || 'none'; }
    function stepName(i) { return s(cps[i][STEP]) || s(cps[i][EV]); }

    // ---- layout: a lane per run shown, a column per position, a rewound run starts right after
    // the checkpoint it came from. Archived runs not asked for by name have no lane (nor edges)
    // until the box is ticked; their columns are kept, so nothing moves when they appear.
    var maxCol = 0, edges = [], rows = [];
    runs.forEach(function (r, n) {
      r.lane = n;
      var from = r.origin && r.origin.from >= 0 ? r.origin.from : -1;
      r.x0 = from >= 0 && runs[cps[from][RUN]].x0 != null ? col(from) + 1 : 0;
      maxCol = Math.max(maxCol, r.x0 + r.count);
      if (from >= 0 && r.count > 0) edges.push({ from: from, to: r.first, kind: r.origin.kind });
    });
    function col(i) { var r = runs[cps[i][RUN]]; return r.x0 + (i - r.first); }
    function cx(i) { return LABEL + DX + col(i) * DX; }
    function cy(r) { return r.row * DY + DY / 2; }
    function hidden(r) { return r.folded && !showArchived; }
    // The runs shown, top to bottom (r.row), and the graph's height for them.
    function relayout() {
      rows = runs.filter(function (r) { return !hidden(r); });
      rows.forEach(function (r, n) { r.row = n; });
      svg.setAttribute('height', String(Math.max(DY, rows.length * DY)));
    }

    // ---- header
    var ncp = cps.length;
    $('stats').textContent = plural(runs.length, 'run') + ' · ' + plural(ncp, 'checkpoint') +
      ' · files embedded for ' + D.diffs + (D.diffs === ncp ? ' (all)' : ' newest') + ' · made ' +
      iso(D.generated);
    if (D.problems.length) {
      var pr = $('problems');
      D.problems.forEach(function (p) { pr.appendChild(el('li', null, p)); });
    }
    // The box is there only when there is something for it to show.
    var archivedCount = runs.filter(function (r) { return r.folded; }).length;
    $('archived-label').textContent = 'show ' + plural(archivedCount, 'archived run');
    $('archived-toggle').hidden = archivedCount === 0;
    if (!archivedCount) showArchived = false;
    function setArchived(on) {
      if (!archivedCount) return;
      showArchived = $('archived').checked = on;
      draw();
    }

    // ---- the graph, drawn for the lanes in view only
    var graph = $('graph');
    var svg = sv('svg', { width: LABEL + DX * (maxCol + 2), height: DY }, 'lanes');
    var layer = sv('g', {});
    svg.appendChild(layer);
    // Captions are measured here, out of sight, to be cut to the caption column.
    var measure = sv('text', { x: 0, y: -100, visibility: 'hidden' });
    svg.appendChild(measure);
    graph.appendChild(svg);
    var pending = false;
    function schedule() { if (!pending) { pending = true; requestAnimationFrame(function () { pending = false; draw(); }); } }
    graph.addEventListener('scroll', schedule, on);
    window.addEventListener('resize', schedule, on);

    function draw() {
      relayout();
      var lo = Math.max(0, Math.floor(graph.scrollTop / DY) - 10);
      var hi = Math.min(rows.length - 1, Math.ceil((graph.scrollTop + graph.clientHeight) / DY) + 10);
      var g = sv('g', {});
      for (var n = lo; n <= hi; n++) drawLane(g, rows[n]);
      edges.forEach(function (e) {
        var ra = runs[cps[e.from][RUN]], rb = runs[cps[e.to][RUN]];
        // An edge is drawn only between two lanes shown: never from or to nothing.
        if (hidden(ra) || hidden(rb)) return;
        var a = ra.row, b = rb.row;
        if (Math.max(a, b) < lo || Math.min(a, b) > hi) return;
        var x1 = cx(e.from), y1 = cy(ra), x2 = cx(e.to), y2 = cy(rb);
        var p = sv('path', { d: 'M' + x1 + ' ' + y1 + ' C' + x1 + ' ' + y2 + ' ' + x1 + ' ' + y2 + ' ' + x2 + ' ' + y2,
          'data-from': cps[e.from][ID], 'data-to': cps[e.to][ID] }, 'edge ' + e.kind);
        var t = sv('title', {});
        t.textContent = e.kind + ' from ' + runs[cps[e.from][RUN]].id + ' @' + cps[e.from][SEQ];
        p.appendChild(t);
        g.insertBefore(p, g.firstChild);
      });
      layer.replaceWith(g);
      layer = g;
    }

    // `full` cut with an ellipsis to at most `width` pixels in the style of `cls`.
    var fitted = {};
    function fit(cls, full, width) {
      var key = cls + '\n' + full;
      if (fitted[key] != null) return fitted[key];
      measure.setAttribute('class', cls);
      measure.textContent = full;
      var out = full;
      if (measure.getComputedTextLength() > width) {
        var chars = Array.from(full), lo = 0, hi = chars.length;
        while (lo < hi) {
          var mid = Math.ceil((lo + hi) / 2);
          measure.textContent = chars.slice(0, mid).join('') + '…';
          if (measure.getComputedTextLength() <= width) lo = mid; else hi = mid - 1;
        }
        out = chars.slice(0, lo).join('').replace(/\s+$/, '') + '…';
      }
      measure.textContent = '';
      measure.removeAttribute('class');
      fitted[key] = out;
      return out;
    }

    function drawLane(g, r) {
      var y = cy(r), selRun = sel >= 0 && cps[sel][RUN] === r.lane;
      var cls = 'lane' + (selRun ? ' selected' : '') + (hits && hits.runs[r.lane] ? ' hit' : '') +
        (hits && !hits.runs[r.lane] ? ' dim' : '');
      var lane = sv('g', { 'data-run': r.id }, cls);
      lane.appendChild(sv('rect', { x: 0, y: y - DY / 2, width: '100%', height: DY }, 'lane-bg'));
      lane.appendChild(sv('circle', { cx: 10, cy: y, r: 5 }, 'run-dot rs-' + r.status));
      // The captions stay in their column, cut short with an ellipsis (whole in the tooltip),
      // so they never run under the dots or over the edges.
      var room = LABEL - CAPTION_X - DX / 2;
      var full = r.label || r.id;
      var subFull = [r.id, r.status, r.agent, r.sessions[0], runTokens(r), ago(r.last)].filter(Boolean).join(' · ');
      var name = sv('text', { x: CAPTION_X, y: y - 2, 'data-lane': r.lane }, 'run-name');
      name.textContent = fit('run-name', full, room);
      var tip = sv('title', {});
      tip.textContent = full + '\n' + subFull;
      name.appendChild(tip);
      lane.appendChild(name);
      var sub = sv('text', { x: CAPTION_X, y: y + 10 }, 'run-sub');
      sub.textContent = fit('run-sub', subFull, room);
      lane.appendChild(sub);
      if (r.count === 0) { g.appendChild(lane); return; }
      var a = r.first, b = r.first + r.count - 1;
      lane.appendChild(sv('line', { x1: cx(a), y1: y, x2: cx(b), y2: y }, 'chain'));
      for (var i = a; i <= b; i++) {
        var c = sv('circle', { cx: cx(i), cy: y, r: R, 'data-i': i, 'data-id': cps[i][ID] },
          'node st-' + statusOf(i) + (i === sel ? ' sel' : '') + (hits && hits.cps[i] ? ' hit' : ''));
        var t = sv('title', {});
        t.textContent = stepName(i) + ' #' + cps[i][SEQ] + ' (' + statusOf(i) + ')';
        c.appendChild(t);
        lane.appendChild(c);
      }
      g.appendChild(lane);
    }

    svg.addEventListener('click', function (ev) {
      var t = ev.target;
      if (t.getAttribute('data-i') != null) select(+t.getAttribute('data-i'));
      else if (t.getAttribute('data-lane') != null) {
        var r = runs[+t.getAttribute('data-lane')];
        if (r.count) select(r.first + r.count - 1);
      }
    });
    $('archived').addEventListener('change', function () { setArchived(this.checked); }, on);

    // ---- selection and the detail panel
    function select(i) {
      if (i < 0 || i >= ncp) return;
      sel = i;
      var r = runs[cps[i][RUN]];
      // A checkpoint of an archived run asked for (by address, search or key) ticks the box.
      if (hidden(r)) { showArchived = $('archived').checked = true; }
      relayout();
      var y = cy(r);
      if (y < graph.scrollTop + DY || y > graph.scrollTop + graph.clientHeight - DY)
        graph.scrollTop = Math.max(0, y - graph.clientHeight / 2);
      var x = cx(i);
      if (x < graph.scrollLeft + LABEL || x > graph.scrollLeft + graph.clientWidth - DX)
        graph.scrollLeft = Math.max(0, x - graph.clientWidth / 2);
      try { history.replaceState(null, '', '#' + cps[i][ID]); } catch (e) { /* file:// in some browsers */ }
      draw();
      detail(i);
    }

    function kv(tbody, k, v) {
      if (v == null || v === '' || (Array.isArray(v) && !v.length)) return;
      var tr = el('tr');
      tr.appendChild(el('th', null, k));
      var td = el('td', typeof v === 'string' ? null : 'json');
      td.textContent = typeof v === 'string' ? v : JSON.stringify(v, null, 1);
      tr.appendChild(td);
      tbody.appendChild(tr);
    }

    // A run's own tokens (all four counts) and their cost when priced, or null.
    function runTokens(r) {
      if (!r.tokens) return null;
      var t = r.tokens, n = t.input + t.output + t.cache_read + t.cache_write;
      return n + ' tokens' + (r.cost != null ? ' (cost ' + r.cost + ')' : '');
    }

    function detail(i) {
      var c = cps[i], r = runs[c[RUN]], x = D.extra[i] || {}, box = $('detail');
      box.replaceChildren();
      var h = el('h2');
      h.appendChild(el('span', 'badge st-' + statusOf(i), statusOf(i)));
      h.appendChild(document.createTextNode(' ' + (r.label || r.id) + ' / ' + stepName(i) + ' @' + c[SEQ]));
      box.appendChild(h);
      var table = el('table', 'fields'), tb = el('tbody');
      table.appendChild(tb);
      kv(tb, 'checkpoint', c[ID]);
      kv(tb, 'run', r.id);
      kv(tb, 'label', r.label);
      kv(tb, 'run tokens', runTokens(r));
      kv(tb, 'seq', String(c[SEQ]));
      kv(tb, 'step', s(c[STEP]));
      kv(tb, 'attempt', String(c[ATT]));
      kv(tb, 'event', s(c[EV]));
      kv(tb, 'step_kind', s(c[KIND]));
      kv(tb, 'status', s(c[ST]));
      kv(tb, 'sdk_session_id', s(c[SES]));
      kv(tb, 'ts', iso(ts(i)) + ' (' + ago(ts(i)) + ')');
      kv(tb, 'writer', s(c[WR]));
      kv(tb, 'git_commit_sha', s(c[SHA]));
      kv(tb, 'head_ref', s(c[REF]));
      kv(tb, 'started_at', c[STARTED] == null ? null : iso(D.base + c[STARTED]));
      kv(tb, 'finished_at', c[FINISHED] == null ? null : iso(D.base + c[FINISHED]));
      kv(tb, 'predecessor', c[PAR] >= 0 ? cps[c[PAR]][ID] : null);
      Object.keys(x).sort().forEach(function (k) {
        if (k !== 'records' && k !== 'artifacts' && k !== 'excluded') kv(tb, k, x[k]);
      });
      box.appendChild(table);
      list(box, 'Records', x.records, function (rec) {
        var li = el('li');
        li.appendChild(el('span', 'badge rec', rec.decision || rec.type));
        var rest = {};
        Object.keys(rec).forEach(function (k) { if (k !== 'type' && k !== 'decision') rest[k] = rec[k]; });
        li.appendChild(el('code', null, JSON.stringify(rest)));
        return li;
      });
      list(box, 'Artifacts', x.artifacts, function (a) {
        return el('li', null, (a.path || a.uri || '') + '  ' + (a.oid || a.digest || ''));
      });
      list(box, 'Excluded from the snapshot', x.excluded, function (e) {
        return el('li', null, e.path + ' — ' + e.reason);
      });
      files(box, i);
      timeline(box, r);
    }

    function list(box, title, items, fn) {
      if (!items || !items.length) return;
      box.appendChild(el('h3', null, title + ' (' + items.length + ')'));
      var ul = el('ul', 'records');
      items.forEach(function (it) { ul.appendChild(fn(it)); });
      box.appendChild(ul);
    }

    function files(box, i) {
      var f = D.files[i];
      blamers = {};
      box.appendChild(el('h3', null, 'Files changed against its predecessor' + (f ? ' (' + f.files.length + ')' : '')));
      if (!f) {
        box.appendChild(el('p', 'note', 'Not embedded in this page (only the newest ' + D.diffs +
          '): git agent-rewind diff ' + cps[i][ID].slice(0, 12)));
        return;
      }
      if (!f.files.length) box.appendChild(el('p', 'note', 'No file changed.'));
      var shown = 0;
      f.files.forEach(function (file) {
        var d = el('details', 'file'), sum = el('summary'), lines = file.patch ? file.patch.split('\n') : [];
        var add = 0, del = 0;
        lines.forEach(function (l) {
          if (l[0] === '+' && l.slice(0, 4) !== '+++ ') add++;
          else if (l[0] === '-' && l.slice(0, 4) !== '--- ') del++;
        });
        d.setAttribute('data-file', file.path);
      sum.appendChild(el('span', 'chg chg-' + file.change, file.change));
        sum.appendChild(document.createTextNode(' ' + file.path + ' '));
        sum.appendChild(el('span', 'count', file.binary ? 'binary' : '+' + add + ' −' + del + (file.truncated ? ' (truncated)' : '')));
        d.appendChild(sum);
        if (D.blame && file.change !== 'deleted' && !file.binary) {
          var btn = el('button', 'blame-btn', 'who wrote each line');
          btn.setAttribute('data-path', file.path);
          var ask = function () { d.open = true; blame(d, btn, cps[i][ID], file.path); };
          btn.addEventListener('click', function (ev) { ev.preventDefault(); ev.stopPropagation(); ask(); });
          sum.appendChild(btn);
          blamers[file.path] = ask;
        }
        var built = false;
        function build() {
          if (built) return;
          built = true;
          var pre = el('pre', 'diff');
          lines.forEach(function (l) {
            var k = l.slice(0, 3) === '+++' || l.slice(0, 3) === '---' ? 'meta' :
              l[0] === '+' ? 'add' : l[0] === '-' ? 'del' : l.slice(0, 2) === '@@' ? 'hunk' : 'ctx';
            pre.appendChild(el('span', k, l + '\n'));
          });
          if (file.binary) pre.appendChild(el('span', 'meta', 'binary content not shown\n'));
          d.appendChild(pre);
        }
        // Big diffs stay folded until opened.
        if (lines.length <= 200 && shown + lines.length <= 800) { d.open = true; shown += lines.length; build(); }
        d.addEventListener('toggle', build);
        box.appendChild(d);
      });
      if (f.omitted) box.appendChild(el('p', 'note', f.omitted + (f.omitted === 1 ? ' more changed file' : ' more changed files') + ' not embedded.'));
    }

    // ---- attribution of a checkpoint's file, asked of the server that served the page
    // (`view --serve`: blame?c=<checkpoint>&p=<path>); shown as a table built with textContent.
    var blamers = {};
    function who(l) {
      var a = l.agent;
      if (!a) return l.author && l.author.name ? l.author.name : 'person';
      return (a.agent || 'agent') + (a.model ? ':' + a.model : '') + (a.source ? ' via ' + a.source : '') +
        ' ' + a.run + (a.step ? '/' + a.step : '') + '@' + a.seq;
    }
    function blame(d, btn, id, path) {
      var old = d.querySelector('.blame');
      if (old) old.remove();
      var box = el('div', 'blame');
      box.appendChild(el('p', 'note', 'asking who wrote each line of ' + path + '…'));
      d.insertBefore(box, btn.parentNode.nextSibling);
      try { history.replaceState(null, '', '#' + id + ':' + encodeURIComponent(path)); } catch (e) { /* ignore */ }
      fetch('blame?c=' + encodeURIComponent(id) + '&p=' + encodeURIComponent(path), { credentials: 'same-origin' })
        .then(function (r) {
          return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || ('HTTP ' + r.status)); return j; });
        })
        .then(function (b) {
          box.replaceChildren();
          var t = el('table', 'blame-lines'), tb = el('tbody');
          t.appendChild(tb);
          b.lines.forEach(function (l) {
            var tr = el('tr', 'bl-' + l.origin);
            tr.appendChild(el('td', 'ln', l.line));
            tr.appendChild(el('td', 'who', who(l)));
            tr.appendChild(el('td', 'src', l.content));
            tb.appendChild(tr);
          });
          var agents = b.lines.filter(function (l) { return l.origin === 'agent'; }).length;
          box.appendChild(el('p', 'note', agents + ' of ' + plural(b.lines.length, 'line') + ' by an agent'));
          box.appendChild(t);
          box.setAttribute('data-blamed', path);
        })
        .catch(function (e) {
          box.replaceChildren(el('p', 'note error', 'could not get the attribution: ' + e.message));
          box.setAttribute('data-blamed', path);
        });
    }

    // [step, attempt, kind, status, begin, end, first, last, wait_since, wait_until, decision]
    function timeline(box, r) {
      if (!r.steps.length) return;
      box.appendChild(el('h3', null, 'Timeline of ' + r.id + ' (' + plural(r.steps.length, 'step attempt') + ')'));
      var t0 = Infinity, t1 = -Infinity;
      r.steps.forEach(function (p) {
        t0 = Math.min(t0, p[4]);
        t1 = Math.max(t1, p[5] != null ? p[5] : cps[p[7]][TS], p[9] != null ? p[9] : 0);
      });
      var span = Math.max(1, t1 - t0), wrap = el('div', 'timeline');
      r.steps.forEach(function (p) {
        var row = el('div', 'trow' + (sel >= p[6] && sel <= p[7] ? ' cur' : ''));
        row.appendChild(el('span', 'tname', s(p[0]) + ' #' + p[1] + (s(p[2]) ? ' (' + s(p[2]) + ')' : '')));
        var track = el('span', 'track'), end = p[5] != null ? p[5] : cps[p[7]][TS];
        var bar = el('span', 'bar st-' + (s(p[3]) || 'none') + (p[5] == null ? ' open' : ''));
        bar.style.left = ((p[4] - t0) / span * 100) + '%';
        bar.style.width = Math.max(0.5, (end - p[4]) / span * 100) + '%';
        track.appendChild(bar);
        var text = dur(end - p[4]) + ' · ' + (s(p[3]) || '?') + (p[5] == null ? ' (unfinished)' : '');
        if (p[8] != null) {
          var w = el('span', 'wait'), wend = p[9] != null ? p[9] : end;
          w.style.left = ((p[8] - t0) / span * 100) + '%';
          w.style.width = Math.max(0.5, (wend - p[8]) / span * 100) + '%';
          track.appendChild(w);
          text += ' · gate waited ' + dur(wend - p[8]) + (s(p[10]) ? ' (' + s(p[10]) + ')' : ' (waiting)');
        }
        row.appendChild(track);
        var tdur = el('span', 'tdur', text);
        // Still running, on a live page: how long it has run, counted each second (tick).
        if (D.live && p[5] == null && s(p[3]) === 'running') {
          var since = el('span', 'since');
          since.setAttribute('data-since', String(D.base + p[4]));
          tdur.appendChild(since);
        }
        row.appendChild(tdur);
        row.addEventListener('click', function () { select(p[7]); });
        wrap.appendChild(row);
      });
      box.appendChild(wrap);
    }

    // ---- search over run ids, labels, agents, steps and session ids
    var q = $('q'), results = $('results');
    q.addEventListener('input', function () {
      var v = q.value.trim().toLowerCase();
      results.replaceChildren();
      if (!v) { hits = null; draw(); return; }
      hits = { runs: {}, cps: {} };
      var out = [];
      function has(x) { return x != null && String(x).toLowerCase().indexOf(v) >= 0; }
      runs.forEach(function (r) {
        if (has(r.id) || has(r.label) || has(r.agent) || r.sessions.some(has)) {
          hits.runs[r.lane] = true;
          if (r.count) out.push([r.first + r.count - 1, 'run ' + r.id + (r.label ? ' — ' + r.label : '')]);
        }
      });
      for (var i = 0; i < ncp; i++) {
        if (has(s(cps[i][STEP])) || has(s(cps[i][SES])) || cps[i][ID].indexOf(v) === 0) {
          hits.cps[i] = true;
          hits.runs[cps[i][RUN]] = true;
          if (out.length < 200) out.push([i, runs[cps[i][RUN]].id + ' / ' + stepName(i) + ' @' + cps[i][SEQ]]);
        }
      }
      out.slice(0, 50).forEach(function (o) {
        var b = el('button', 'result', o[1]);
        b.addEventListener('click', function () { select(o[0]); });
        results.appendChild(b);
      });
      if (!out.length) results.appendChild(el('span', 'note', 'no match'));
      draw();
    }, on);
    q.addEventListener('keydown', function (ev) {
      if (ev.key === 'Enter' && results.firstChild && results.firstChild.click) results.firstChild.click();
      if (ev.key === 'Escape') { q.value = ''; q.dispatchEvent(new Event('input')); q.blur(); }
    }, on);

    // ---- keyboard: ←/→ along the run, ↑/↓ to the next run shown, / search, a archived
    function lane(step) {
      if (sel < 0) return;
      var n = cps[sel][RUN] + step;
      while (n >= 0 && n < runs.length && (hidden(runs[n]) || !runs[n].count)) n += step;
      if (n < 0 || n >= runs.length) return;
      var r = runs[n], want = col(sel) - r.x0;
      select(r.first + Math.max(0, Math.min(r.count - 1, want)));
    }
    document.addEventListener('keydown', function (ev) {
      if (ev.target === q || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      var r = sel >= 0 ? runs[cps[sel][RUN]] : null, k = ev.key;
      if (k === '/') { ev.preventDefault(); q.focus(); }
      else if ((k === 'ArrowLeft' || k === 'h') && r && sel > r.first) select(sel - 1);
      else if ((k === 'ArrowRight' || k === 'l') && r && sel < r.first + r.count - 1) select(sel + 1);
      else if (k === 'ArrowUp' || k === 'k') lane(-1);
      else if (k === 'ArrowDown' || k === 'j') lane(1);
      else if (k === 'Home' && r) select(r.first);
      else if (k === 'End' && r) select(r.first + r.count - 1);
      else if (k === 'a') setArchived(!showArchived);
      else return;
      ev.preventDefault();
    }, on);

    // ---- first selection: the checkpoint named in the address (#<id prefix>), else the newest
    // checkpoint of a run shown.
    // `#<id prefix>:<path>` (a file's attribution asked for, as the blame button leaves it).
    var hash = location.hash.slice(1), colon = hash.indexOf(':');
    var wantPath = colon >= 0 ? decodeURIComponent(hash.slice(colon + 1)) : null;
    var want = decodeURIComponent(colon >= 0 ? hash.slice(0, colon) : hash), first = -1;
    if (want.length >= 4) for (var j = 0; j < ncp; j++) if (cps[j][ID].indexOf(want) === 0) { first = j; break; }
    if (first < 0) {
      for (var m = 0; m < ncp; m++) {
        if (runs[cps[m][RUN]].folded) continue;
        if (first < 0 || cps[m][TS] > cps[first][TS]) first = m;
      }
    }
    if (first < 0 && ncp) first = ncp - 1;
    draw();
    if (first >= 0) {
      select(first);
      if (wantPath && blamers[wantPath]) blamers[wantPath]();
    } else $('detail').appendChild(el('p', 'note', 'No runs in this repository yet.'));
    if (keep) restore(keep);
    return ncp ? cps.reduce(function (a, c) { return c[TS] > a[TS] ? c : a; })[ID] : null;
  }

  // What a person was looking at, kept across a rebuild: the scroll of the page and of the
  // graph, the selected checkpoint (unless it was the newest: then the new newest), the
  // files opened.
  function snapshot(newest) {
    var graph = document.getElementById('graph'), open = [];
    document.querySelectorAll('details.file[open]').forEach(function (d) { open.push(d.getAttribute('data-file')); });
    return { x: window.scrollX, y: window.scrollY, gx: graph.scrollLeft, gy: graph.scrollTop, open: open,
      followNewest: location.hash.slice(1) === newest };
  }
  function restore(k) {
    var graph = document.getElementById('graph');
    graph.scrollLeft = k.gx;
    graph.scrollTop = k.gy;
    k.open.forEach(function (path) {
      document.querySelectorAll('details.file').forEach(function (d) {
        if (d.getAttribute('data-file') === path) d.open = true;
      });
    });
    window.scrollTo(k.x, k.y);
  }

  var data = JSON.parse(document.getElementById('data').textContent);
  var newest = build(data, null);
  document.body.setAttribute('data-ready', 'true');
  document.body.setAttribute('data-ms', String(Math.round(performance.now())));

  // A running step's duration, counted on the page each second from its start (only while
  // served: a page file cannot know when the step ended).
  function clock(ms) {
    var t = Math.max(0, Math.floor(ms / 1000)), h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, sec = t % 60;
    return h + ':' + (m < 10 ? '0' : '') + m + ':' + (sec < 10 ? '0' : '') + sec;
  }
  function tick() {
    document.querySelectorAll('[data-since]').forEach(function (e) {
      e.textContent = ' · running for ' + clock(Date.now() - +e.getAttribute('data-since'));
    });
  }
  if (!data.live) return;
  tick();
  // Live: ask the server every second for the fingerprint of the state (`version`); when it
  // is not the one this page was built from, fetch the page again and build it from its data
  // (parsed by DOMParser, which runs nothing), without a reload.
  var asking = false;
  function poll() {
    if (asking) return;
    asking = true;
    fetch('version', { cache: 'no-store' })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (v) {
        if (!v || v.version === data.live) return null;
        return fetch('./', { cache: 'no-store' })
          .then(function (r) { return r.ok ? r.text() : null; })
          .then(function (html) {
            if (html == null) return;
            var next = new DOMParser().parseFromString(html, 'text/html').getElementById('data');
            if (!next) return;
            var keep = snapshot(newest);
            data = JSON.parse(next.textContent);
            if (keep.followNewest) try { history.replaceState(null, '', '#'); } catch (e) { /* kept */ }
            newest = build(data, keep);
            tick();
            document.body.setAttribute('data-version', data.live);
          });
      })
      .catch(function () { /* the server stopped: the page stays as it is */ })
      .then(function () { asking = false; });
  }
  setInterval(function () { tick(); poll(); }, 1000);
})();
