// The operations page (/ops): reads /api/analytics/* for the chosen time
// range, every 5 seconds while "Refresh every 5 s" is on and the page is
// visible, and draws the series with uPlot. Without uPlot (a binary built
// without its front-end assets) the tables are still filled.
(function () {
  "use strict";

  var REFRESH_MS = 5000;
  var HISTORY = 120; // samples of each process kept for the resources chart
  var COLORS = ["#2456d3", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285",
    "#e67700", "#5f3dc4", "#495057", "#a61e4d"];
  var hasCharts = typeof window.uPlot === "function";

  var rangeEl = document.getElementById("range");
  var autoEl = document.getElementById("auto");
  var statusEl = document.getElementById("status");
  var formEl = document.getElementById("controls");

  var charts = {};      // element id → {plot, key, state}
  var history = {};     // process → [{t, rss, cpu}]
  var view = null;      // the window asked for last: {from, to} in seconds
  var inFlight = false;
  var again = false;     // a refresh asked for while one was running
  var timer = null;

  // ---- helpers ------------------------------------------------------------

  function num(v) {
    return v === null || v === undefined || isNaN(v) ? null : Number(v);
  }

  function fmt(v, digits) {
    v = num(v);
    if (v === null) return "–";
    return v.toLocaleString(undefined, { maximumFractionDigits: digits === undefined ? 1 : digits });
  }

  function seconds(t) {
    if (typeof t === "number") return t;
    return Math.floor(Date.parse(t) / 1000);
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    if (text instanceof Node) td.appendChild(text); else td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  // labelCells gives each body cell its column's header as data-label,
  // which a narrow screen shows beside the value when a .stack table's
  // rows become cards.
  function labelCells(tbody) {
    var heads = tbody.parentNode.querySelectorAll("thead th");
    Array.prototype.forEach.call(tbody.rows, function (tr) {
      Array.prototype.forEach.call(tr.cells, function (td, i) {
        if (heads[i] && td.colSpan === 1) td.setAttribute("data-label", heads[i].textContent);
      });
    });
  }

  function link(href, text) {
    var a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    return a;
  }

  function emptyRow(tbody, cols, text) {
    var tr = document.createElement("tr");
    var td = cell(tr, text);
    td.colSpan = cols;
    tbody.appendChild(tr);
  }

  // buckets lists the start of every bucket of the answer's window, so that
  // a chart spans the whole range even where nothing happened.
  function buckets(rep) {
    var step = num(rep.interval);
    var from = seconds(rep.from), to = seconds(rep.to);
    var xs = [];
    if (!step || isNaN(from) || isNaN(to)) return xs;
    for (var t = Math.floor(from / step) * step; t < to && xs.length < 10000; t += step) xs.push(t);
    return xs;
  }

  // columns gives one array per field over the buckets. Buckets the answer
  // has no row for are zero for the counts (fields in zero), so that their
  // lines are drawn, and null (a gap) for the others.
  function columns(rep, fields, zero) {
    var xs = buckets(rep), at = {};
    xs.forEach(function (t, i) { at[t] = i; });
    var ys = fields.map(function (f) {
      var z = zero && zero.indexOf(f) >= 0 ? 0 : null;
      return xs.map(function () { return z; });
    });
    (rep.series || []).forEach(function (row) {
      var i = at[seconds(row.t)];
      if (i === undefined) return;
      fields.forEach(function (f, k) { ys[k][i] = num(row[f]); });
    });
    return { xs: xs, ys: ys };
  }

  // gaps turns the reports' 0 percentiles (nothing measured) into gaps.
  function gaps(col) {
    return col.map(function (v) { return v === 0 ? null : v; });
  }

  // pivot gives one array per value of key (a step type, a channel…),
  // holding field, over the buckets; absent buckets count as zero when
  // zeroFill (counts), else stay null (percentiles).
  function pivot(rep, key, field, zeroFill) {
    var xs = buckets(rep), at = {}, byKey = {}, keys = [];
    xs.forEach(function (t, i) { at[t] = i; });
    (rep.series || []).forEach(function (row) {
      var i = at[seconds(row.t)], k = row[key] || "none";
      if (i === undefined) return;
      if (!byKey[k]) {
        byKey[k] = xs.map(function () { return zeroFill ? 0 : null; });
        keys.push(k);
      }
      byKey[k][i] = (zeroFill ? byKey[k][i] : 0) + (num(row[field]) || 0);
    });
    keys.sort();
    return { xs: xs, keys: keys, ys: keys.map(function (k) { return byKey[k]; }) };
  }

  // ---- charts -------------------------------------------------------------

  // window gives a report's own window in seconds, else the one asked for.
  function windowOf(rep) {
    var from = rep ? seconds(rep.from) : NaN, to = rep ? seconds(rep.to) : NaN;
    if (!isNaN(from) && !isNaN(to) && to > from) return { from: from, to: to };
    return view;
  }

  // lonePoints lists, per series (index 0 is the x series), the values that
  // no line reaches: a line needs two neighbouring values (or, spanning
  // gaps, any other value), so a series of one bucket would draw nothing.
  // These are drawn as points.
  function lonePoints(ys, spanGaps) {
    return [null].concat(ys.map(function (col) {
      var idx = [], n = 0, i;
      for (i = 0; i < col.length; i++) if (col[i] !== null) n++;
      for (i = 0; i < col.length; i++) {
        if (col[i] === null) continue;
        var prev = i > 0 ? col[i - 1] : null, next = i < col.length - 1 ? col[i + 1] : null;
        if (spanGaps ? n === 1 : prev === null && next === null) idx.push(i);
      }
      return idx;
    }));
  }

  // mark records on the chart's element what it shows: the x axis's span
  // (seconds) and how many lone points it drew, for tests and tooling.
  function mark(el, u, state) {
    el.setAttribute("data-x-min", String(u.scales.x.min));
    el.setAttribute("data-x-max", String(u.scales.x.max));
    var n = 0;
    (state.lone || []).forEach(function (idx, i) { if (i > 0 && u.series[i].show) n += idx.length; });
    el.setAttribute("data-lone-points", String(n));
  }

  function chartWidth(el) {
    return Math.max(240, el.clientWidth || el.parentNode.clientWidth || 320);
  }

  function chartHeight() {
    return window.innerWidth < 480 ? 180 : 220;
  }

  // draw shows xs and ys as lines named by labels in the element id, over
  // opts.win (the chosen time range, {from, to} in seconds), with a point
  // wherever no line reaches a value. The plot is kept and only its data
  // replaced while the labels stay the same.
  function draw(id, xs, labels, ys, opts) {
    var el = document.getElementById(id);
    if (!el) return;
    opts = opts || {};
    var any = ys.some(function (col) { return col.some(function (v) { return v !== null && v !== 0; }); });
    el.setAttribute("data-points", String(any ? xs.length : 0));
    if (!hasCharts) return;
    if (!any || xs.length === 0) {
      if (charts[id]) { charts[id].plot.destroy(); delete charts[id]; }
      if (!el.querySelector(".empty")) {
        clear(el);
        var p = document.createElement("p");
        p.className = "empty";
        p.textContent = "No data in this range.";
        el.appendChild(p);
      }
      return;
    }
    var data = [xs].concat(ys);
    var key = labels.join("\u0000");
    var lone = lonePoints(ys, !!opts.spanGaps);
    if (charts[id] && charts[id].key === key) {
      charts[id].state.win = opts.win;
      charts[id].state.lone = lone;
      charts[id].plot.setData(data);
      return;
    }
    if (charts[id]) charts[id].plot.destroy();
    clear(el);
    // state is what the plot's callbacks read, replaced with each new data.
    var state = { win: opts.win, lone: lone };
    var series = [{}].concat(labels.map(function (label, i) {
      return { label: label, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: !!opts.spanGaps,
        scale: opts.right && opts.right.indexOf(label) >= 0 ? "right" : "y",
        value: function (u, v) { return v === null ? "–" : fmt(v); },
        // Points where uPlot shows none (too dense) but no line reaches.
        // Earlier series get larger points: series of equal values (p50,
        // p95 and p99 of one document) draw concentric rings, each colour
        // visible, not one point hiding the others.
        points: { size: 7 + 4 * (labels.length - 1 - i), width: 2, fill: COLORS[i % COLORS.length], filter: function (u, si, show) {
          var idx = state.lone[si];
          return show || !idx || !idx.length ? null : idx;
        } } };
    }));
    var axes = [{}, { scale: "y", size: 60, values: function (u, vals) { return vals.map(function (v) { return fmt(v); }); } }];
    if (opts.right) {
      axes.push({ scale: "right", side: 1, size: 60, grid: { show: false },
        values: function (u, vals) { return vals.map(function (v) { return fmt(v) + " ms"; }); } });
    }
    // The x axis spans the chosen range whatever the data: one sample
    // would otherwise make uPlot widen it to years around that instant.
    var x = { time: true, range: function (u, min, max) {
      return state.win ? [state.win.from, state.win.to] : [min, max];
    } };
    var plot = new window.uPlot({
      width: chartWidth(el), height: chartHeight(), series: series, axes: axes,
      scales: { x: x }, cursor: { drag: { x: false, y: false } },
      hooks: { draw: [function (u) { mark(el, u, state); }] }
    }, data, el);
    charts[id] = { plot: plot, key: key, state: state };
  }

  function resizeCharts() {
    Object.keys(charts).forEach(function (id) {
      var el = document.getElementById(id);
      charts[id].plot.setSize({ width: chartWidth(el), height: chartHeight() });
    });
  }

  // ---- sections -----------------------------------------------------------

  function showOverview(rep) {
    var c = columns(rep, ["docs_in", "docs_out", "failed", "p50_ms", "p95_ms", "p99_ms", "backlog"],
      ["docs_in", "docs_out", "failed"]);
    draw("chart-throughput", c.xs, ["in", "out", "failed"], c.ys.slice(0, 3), { win: windowOf(rep) });
    draw("chart-latency", c.xs, ["p50", "p95", "p99"], c.ys.slice(3, 6).map(gaps), { spanGaps: true, win: windowOf(rep) });
    var t = rep.totals || {};
    var el = document.getElementById("totals-overview");
    clear(el);
    [["In", fmt(t.docs_in, 0)], ["Out", fmt(t.docs_out, 0)], ["Failed", fmt(t.failed, 0)],
      ["Success", t.success_rate === undefined || t.success_rate === null ? "–" : fmt(t.success_rate * 100) + " %"],
      ["p95", fmt(t.p95_ms, 0) + " ms"], ["Backlog", fmt(t.backlog, 0)]].forEach(function (kv) {
      var s = document.createElement("span");
      s.textContent = kv[0] + ": " + kv[1];
      el.appendChild(s);
    });
    if (t.recorder && t.recorder.dropped > 0) {
      var d = document.createElement("span");
      d.className = "error";
      d.textContent = "Metrics dropped: " + fmt(t.recorder.dropped, 0);
      el.appendChild(d);
    }
    showWorkers(t.processes || []);
    return c;
  }

  function showBacklog(overview, lag) {
    var back = overview ? columns(overview, ["backlog"]) : { xs: [], ys: [] };
    var p = lag ? pivot(lag, "topic", "lag", false) : { xs: [], keys: [], ys: [] };
    var xs = back.xs.length ? back.xs : p.xs;
    var labels = [], ys = [];
    if (back.xs.length) { labels.push("backlog (documents)"); ys.push(back.ys[0]); }
    if (p.xs.length === xs.length) {
      p.keys.forEach(function (k, i) { labels.push(k); ys.push(p.ys[i]); });
    }
    draw("chart-backlog", xs, labels, ys, { spanGaps: true, win: windowOf(overview || lag) });
  }

  function showSteps(rep) {
    var p = pivot(rep, "step_type", "p95_ms", false);
    draw("chart-steps", p.xs, p.keys, p.ys, { spanGaps: true, win: windowOf(rep) });
    var tbody = document.querySelector("#table-steps tbody");
    clear(tbody);
    var steps = (rep.totals && rep.totals.steps) || [];
    if (!steps.length) emptyRow(tbody, 7, "No step ran in this range.");
    steps.forEach(function (s) {
      var tr = document.createElement("tr");
      cell(tr, s.step_type);
      cell(tr, fmt(s.count, 0), "num");
      cell(tr, fmt((s.error_rate || 0) * 100) + " %", "num");
      cell(tr, fmt(s.p50_ms, 0), "num");
      cell(tr, fmt(s.p95_ms, 0), "num");
      cell(tr, fmt(s.p99_ms, 0), "num");
      cell(tr, fmt(s.queue_wait && s.queue_wait.p95_ms, 0), "num");
      tbody.appendChild(tr);
    });
  }

  function showErrors(rep) {
    var p = pivot(rep, "error_class", "count", true);
    draw("chart-errors", p.xs, p.keys, p.ys, { win: windowOf(rep) });
    var tbody = document.querySelector("#table-errors tbody");
    clear(tbody);
    var classes = (rep.totals && rep.totals.classes) || [];
    if (!classes.length) emptyRow(tbody, 5, "No failures in this range.");
    classes.forEach(function (e) {
      var tr = document.createElement("tr");
      cell(tr, e.error_class || "unknown");
      cell(tr, e.step_type || "–");
      cell(tr, fmt(e.count, 0), "num");
      cell(tr, e.last_seen ? new Date(e.last_seen).toLocaleString() : "–");
      var docs = document.createElement("span");
      docs.appendChild(link("/api/files?status=failed&sort_by=created_at&sort_order=desc", "failed documents"));
      if (e.sample_file_id) {
        docs.appendChild(document.createTextNode(" · "));
        docs.appendChild(link("/api/files/" + encodeURIComponent(e.sample_file_id),
          "sample #" + e.sample_file_id));
      }
      cell(tr, docs);
      tbody.appendChild(tr);
    });
  }

  function showIntake(rep) {
    var p = pivot(rep, "channel", "count", true);
    draw("chart-intake", p.xs, p.keys, p.ys, { win: windowOf(rep) });
  }

  function showRequests(rep) {
    var c = columns(rep, ["count", "errors_5xx", "p99_ms"], ["count", "errors_5xx"]);
    draw("chart-requests", c.xs, ["requests", "5xx", "p99"], [c.ys[0], c.ys[1], gaps(c.ys[2])], { right: ["p99"], spanGaps: true, win: windowOf(rep) });
  }

  // showWorkers fills the processes table and adds their latest sample to
  // the page's own history, charted as memory per process.
  function showWorkers(procs) {
    var tbody = document.querySelector("#table-workers tbody");
    clear(tbody);
    if (!procs.length) emptyRow(tbody, 7, "No process has reported in this range.");
    var now = Math.floor(Date.now() / 1000);
    procs.forEach(function (p) {
      var tr = document.createElement("tr");
      cell(tr, p.process);
      cell(tr, p.role || "–");
      cell(tr, fmt(p.cpu_percent), "num");
      cell(tr, fmt((p.rss_bytes || 0) / 1048576), "num");
      cell(tr, fmt(p.goroutines, 0), "num");
      cell(tr, fmt(p.metrics_dropped, 0), "num");
      cell(tr, p.last_seen ? new Date(p.last_seen).toLocaleTimeString() : "–");
      tbody.appendChild(tr);
      var h = history[p.process] || (history[p.process] = []);
      h.push({ t: now, rss: (p.rss_bytes || 0) / 1048576 });
      if (h.length > HISTORY) h.shift();
    });
    labelCells(tbody);
    var names = Object.keys(history).sort();
    var times = {};
    names.forEach(function (n) { history[n].forEach(function (s) { times[s.t] = true; }); });
    var xs = Object.keys(times).map(Number).sort(function (a, b) { return a - b; });
    var ys = names.map(function (n) {
      var at = {};
      history[n].forEach(function (s) { at[s.t] = s.rss; });
      return xs.map(function (t) { return at[t] === undefined ? null : at[t]; });
    });
    draw("chart-workers", xs, names.map(function (n) { return n + " MiB"; }), ys, { spanGaps: true, win: view });
  }

  // ---- loading ------------------------------------------------------------

  function query() {
    var span = Number(rangeEl.value) || 3600;
    var to = new Date();
    var from = new Date(to.getTime() - span * 1000);
    view = { from: Math.floor(from.getTime() / 1000), to: Math.ceil(to.getTime() / 1000) };
    return "?from=" + encodeURIComponent(from.toISOString()) + "&to=" + encodeURIComponent(to.toISOString());
  }

  function load(name, q) {
    return fetch("/api/analytics/" + name + q, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (resp) {
        if (resp.status === 401) throw new Error("signed out: sign in again");
        if (!resp.ok) {
          return resp.json().catch(function () { return {}; }).then(function (b) {
            throw new Error(name + ": " + (b.detail || resp.status));
          });
        }
        return resp.json();
      });
  }

  // refresh loads every report for the chosen range. One runs at a time; a
  // refresh asked for meanwhile (a new range) runs right after it.
  function refresh() {
    if (inFlight) { again = true; return; }
    inFlight = true;
    again = false;
    var q = query();
    var names = ["overview", "steps", "errors", "lag", "intake", "requests"];
    Promise.all(names.map(function (n) {
      return load(n, q).then(function (r) { return { ok: r }; }, function (e) { return { err: e }; });
    })).then(function (res) {
      var r = {}, errs = [];
      names.forEach(function (n, i) {
        if (res[i].err) errs.push(res[i].err.message); else r[n] = res[i].ok;
      });
      if (r.overview) showOverview(r.overview);
      if (r.overview || r.lag) showBacklog(r.overview, r.lag);
      if (r.steps) showSteps(r.steps);
      if (r.errors) showErrors(r.errors);
      if (r.intake) showIntake(r.intake);
      if (r.requests) showRequests(r.requests);
      statusEl.textContent = errs.length
        ? "Could not load " + errs.join("; ")
        : "Updated " + new Date().toLocaleTimeString() + (autoEl.checked ? " · refreshing every 5 s" : "");
      statusEl.className = errs.length ? "error" : "muted";
      document.body.setAttribute("data-loaded", String(Number(document.body.getAttribute("data-loaded") || 0) + 1));
    }).then(done, done);
  }

  function done() {
    inFlight = false;
    if (again) refresh();
  }

  function schedule() {
    if (timer) { clearInterval(timer); timer = null; }
    if (autoEl.checked) {
      timer = setInterval(function () { if (!document.hidden) refresh(); }, REFRESH_MS);
    }
  }

  formEl.addEventListener("submit", function (ev) { ev.preventDefault(); refresh(); });
  rangeEl.addEventListener("change", function () {
    history = {};
    refresh();
  });
  autoEl.addEventListener("change", function () { schedule(); refresh(); });
  document.addEventListener("visibilitychange", function () { if (!document.hidden && autoEl.checked) refresh(); });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(resizeCharts, 150);
  });

  schedule();
  refresh();
})();
