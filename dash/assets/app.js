// The live pipeline page: draws each pipeline of every View that arrives on
// the "events" stream as an SVG graph. Everything it shows is computed by
// the server (see package dash); this script only lays it out.
"use strict";

(() => {
  const NS = "http://www.w3.org/2000/svg";
  const NODE_W = 200, GAP_X = 52, GAP_Y = 30, BAND_GAP = 40, PAD = 16;

  const statusEl = document.getElementById("status");
  const ruleEl = document.getElementById("rule");
  const root = document.getElementById("pipelines");
  const eventsEl = document.getElementById("events");
  const eventList = document.getElementById("event-list");
  let updates = 0;

  function el(tag, attrs, parent, text) {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    if (parent) parent.appendChild(n);
    return n;
  }

  function html(tag, cls, parent, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined) n.textContent = text;
    if (parent) parent.appendChild(n);
    return n;
  }

  function count(n) {
    const a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(2) + "G";
    if (a >= 1e6) return (n / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return (n / 1e3).toFixed(1) + "k";
    return String(Math.round(n));
  }

  function secs(s) {
    if (!s) return "–";
    if (s < 1e-3) return (s * 1e6).toFixed(0) + " µs";
    if (s < 1) return (s * 1e3).toFixed(s < 1e-2 ? 2 : 0) + " ms";
    return s.toFixed(2) + " s";
  }

  function colour(f) {
    if (f >= 0.9) return "#d2413c";
    if (f >= 0.5) return "#e0962a";
    return "#2f9e6f";
  }

  // layout puts each stage in the column of its longest path from a source
  // and stacks the stages of a column, centred. Columns that do not fit the
  // width wrap into further bands, like lines of text, so that no pipeline
  // needs scrolling sideways.
  function layout(p, avail, nodeH) {
    const index = new Map();
    p.stages.forEach((s, i) => { if (!index.has(s.name)) index.set(s.name, i); });
    const links = p.edges
      .filter((e) => index.has(e.from) && index.has(e.to))
      .map((e) => ({ a: index.get(e.from), b: index.get(e.to), e }));
    const col = p.stages.map(() => 0);
    for (let round = 0; round < p.stages.length; round++) {
      let moved = false;
      for (const { a, b } of links) {
        if (col[b] < col[a] + 1) { col[b] = col[a] + 1; moved = true; }
      }
      if (!moved) break;
    }
    const cols = [];
    col.forEach((c, i) => { (cols[c] = cols[c] || []).push(i); });
    const perBand = Math.max(1, Math.floor((avail - 2 * PAD + GAP_X) / (NODE_W + GAP_X)));
    const bands = [];
    cols.forEach((c, x) => {
      const k = Math.floor(x / perBand);
      bands[k] = Math.max(bands[k] || 1, c ? c.length : 0);
    });
    const bandTop = [], bandH = [];
    let y = PAD;
    bands.forEach((rows, k) => {
      bandTop[k] = y;
      bandH[k] = rows * nodeH + (rows - 1) * GAP_Y;
      y += bandH[k] + BAND_GAP;
    });
    const pos = [];
    cols.forEach((c, x) => {
      if (!c) return;
      const k = Math.floor(x / perBand), h = c.length * nodeH + (c.length - 1) * GAP_Y;
      c.forEach((i, r) => {
        pos[i] = {
          band: k, bottom: bandTop[k] + bandH[k],
          x: PAD + (x % perBand) * (NODE_W + GAP_X),
          y: bandTop[k] + (bandH[k] - h) / 2 + r * (nodeH + GAP_Y),
        };
      });
    });
    const across = Math.min(cols.length, perBand);
    const width = 2 * PAD + across * NODE_W + Math.max(0, across - 1) * GAP_X;
    return { pos, links, width, height: y - BAND_GAP + PAD, nodeH };
  }

  function drawEdges(g, p, lay) {
    const outs = new Map(), ins = new Map();
    for (const l of lay.links) {
      outs.set(l.a, (outs.get(l.a) || []).concat(l));
      ins.set(l.b, (ins.get(l.b) || []).concat(l));
    }
    const port = (list, l, y) => {
      const k = list.indexOf(l), n = list.length;
      return y + 34 + (lay.nodeH - 68) * (k + 1) / (n + 1);
    };
    for (const l of lay.links) {
      const e = l.e, from = lay.pos[l.a], to = lay.pos[l.b];
      const x1 = from.x + NODE_W, y1 = port(outs.get(l.a), l, from.y);
      const x2 = to.x, y2 = port(ins.get(l.b), l, to.y);
      const c = colour(e.fill);
      const eg = el("g", { class: "edge", "data-from": e.from, "data-to": e.to, "data-fill": e.fill.toFixed(3) }, g);
      let d, lx, ly;
      if (from.band === to.band) {
        const dx = (x2 - x1) / 2;
        d = `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2 - 7},${y2}`;
        lx = (x1 + x2) / 2; ly = (y1 + y2) / 2 - 6;
      } else {
        // Into a later band: out to the right, along the gap below this
        // band, and in from the left.
        const xr = x1 + 14, xl = x2 - 18, ym = from.bottom + BAND_GAP / 2;
        d = `M${x1},${y1} H${xr} V${ym} H${xl} V${y2} H${x2 - 7}`;
        lx = (xr + xl) / 2; ly = ym - 5;
      }
      el("path", { d, stroke: c, "marker-end": `url(#arrow-${p.id})` }, eg);
      const q = el("g", { class: "queue" }, eg);
      el("text", { x: lx, y: ly, "text-anchor": "middle" }, q, `${Math.round(e.fill * 100)}%`);
      if (e.dropped > 0) {
        el("text", { class: "drops", x: lx, y: ly + 22, "text-anchor": "middle" }, q, `−${count(e.dropped)}`);
      }
    }
  }

  // The lines of text a stage's box shows.
  function stageLines(s, sink) {
    const source = s.kind === "source";
    const lines = [];
    if (source) {
      lines.push(`out ${count(s.out_per_second)}/s`, `total out ${count(s.out)}`);
    } else if (sink) {
      lines.push(`in ${count(s.in_per_second)}/s`, `total in ${count(s.in)}`);
    } else {
      lines.push(`in ${count(s.in_per_second)}/s · out ${count(s.out_per_second)}/s`,
        `total in ${count(s.in)} · out ${count(s.out)}`);
    }
    const wk = s.workers === 1 ? "worker" : "workers";
    lines.push(`${s.workers} ${wk}: ${s.busy} busy, ${s.waiting} waiting`);
    if (s.auto) {
      // The engine chooses the count: its bounds, and why it last changed.
      lines.push({ cls: "auto", text: `auto ${s.auto.min}–${s.auto.max}: ${s.auto.reason} ${s.auto.changed_seconds_ago < 1 ? "just now" : secs(s.auto.changed_seconds_ago) + " ago"}`,
        title: s.auto.detail });
    }
    if (s.throttled_seconds > 0) {
      lines.push(`throttled ${secs(s.throttled_seconds)} in all`);
    }
    const busy = `busy ${Math.round(s.utilization * 100)}%`;
    lines.push(source ? `${busy} of the time` : `${busy} · chunks of ${count(s.chunk_size)}`);
    if (!source) {
      lines.push(s.latency_samples === 0 ? "latency: no sample yet"
        : `p50 ${secs(s.latency_p50_seconds)} · p99 ${secs(s.latency_p99_seconds)}`);
      lines.push(`queue ${count(s.queue_depth)} / ${count(s.queue_capacity)} (${Math.round(s.queue_fill * 100)}%)`);
    }
    lines.push({ cls: s.dropped > 0 ? "drops" : "", text: `dropped ${count(s.dropped)}` });
    if (s.window) {
      // A Window stage: how far event time is behind the clock, what it
      // holds, and what came too late.
      const w = s.window;
      const lag = w.watermark_lag_seconds, ago = lag >= 7200 ? `${(lag / 3600).toFixed(1)} h` : lag >= 120 ? `${Math.round(lag / 60)} min` : secs(lag);
      lines.push({ cls: "window", text: `watermark lag ${ago} · ${w.partitions} partition${w.partitions === 1 ? "" : "s"}, ${w.idle_partitions} idle` });
      lines.push({ cls: "window", text: `open ${count(w.open)} windows · keys ${count(s.keys || 0)} · held ${count(w.held_receipts)}` });
      lines.push({ cls: "window" + (w.late + w.late_dropped > 0 ? " drops" : ""),
        text: `late ${count(w.late)} to stream · ${count(w.late_dropped)} dropped · ${count(w.updated)} updates`,
        title: `${count(w.emitted)} panes emitted; ${count(w.revoked)} windows discarded for revoked partitions, ${count(w.revoked_items)} of their items dropped after the revoke` });
    } else if (s.keys > 0) {
      lines.push(`keys ${count(s.keys)}`);
    }
    if (s.failed > 0 || s.retries > 0) {
      lines.push({ cls: "drops failed", text: `failed ${count(s.failed)} · retries ${count(s.retries)}` });
    }
    if (s.connector) {
      // The broker connector's own figures: the family on the box, each
      // series on hover.
      const family = s.connector[0].name.split(".").slice(1, 3).join(" ");
      lines.push({ cls: "connector", text: `${family}: ${s.connector.length} figures`,
        title: s.connector.map(f => `${f.name}${f.labels ? "{" + f.labels + "}" : ""} ${Number.isInteger(f.value) ? count(f.value) : secs(f.value)}`).join("\n") });
    }
    return { source, lines };
  }

  const LINE = 15, TOP = 38, CHART_H = 30, FILL_H = 16;

  // chart draws a series (one point a second, null where unknown) over the
  // box's width: a line for rates, bars for fill.
  function chart(g, y, h, series, top, kind) {
    const w = NODE_W - 20, n = Math.max(series.length, 2), step = w / (n - 1);
    el("rect", { class: "chart-bg", x: 10, y, width: w, height: h }, g);
    if (kind === "fill") {
      el("line", { class: "half", x1: 10, x2: 10 + w, y1: y + h / 2, y2: y + h / 2 }, g);
      const bw = Math.max(w / n, 0.6);
      series.forEach((v, i) => {
        if (v === null || v <= 0) return;
        el("rect", { x: 10 + i * w / n, y: y + h * (1 - v), width: bw + 0.2, height: h * v, fill: colour(v) }, g);
      });
      return;
    }
    let d = "", pen = false;
    series.forEach((v, i) => {
      if (v === null) { pen = false; return; }
      const px = 10 + i * step, py = y + h - (top > 0 ? h * v / top : 0);
      d += `${pen ? "L" : "M"}${px.toFixed(1)},${py.toFixed(1)}`;
      pen = true;
    });
    if (d) el("path", { class: "rate", d }, g);
  }

  function span(n) {
    if (n >= 120) return `${Math.round(n / 60)} min`;
    return `${n} s`;
  }

  function drawStage(g, s, at, sink, nodeH) {
    const { source, lines } = stageLines(s, sink);
    const sg = el("g", {
      class: "stage" + (s.bottleneck ? " bottleneck" : ""),
      transform: `translate(${at.x},${at.y})`,
      "data-stage": s.name, "data-in": s.in, "data-out": s.out, "data-chunk-size": s.chunk_size,
      "data-failed": s.failed, "data-retries": s.retries, "data-workers": s.workers,
      "data-auto-reason": s.auto ? s.auto.reason : "",
      "data-keys": s.keys || 0,
      "data-watermark-lag": s.window ? s.window.watermark_lag_seconds : "",
      "data-open": s.window ? s.window.open : "",
      "data-late": s.window ? s.window.late + s.window.late_dropped : "",
      "data-bottleneck": String(s.bottleneck),
    }, g);
    el("rect", { class: "box", width: NODE_W, height: nodeH, rx: 7 }, sg);
    el("text", { class: "name", x: 10, y: 19 }, sg, s.name);
    el("text", { class: "kind", x: NODE_W - 10, y: 19, "text-anchor": "end" }, sg, s.kind);
    lines.forEach((l, i) => {
      const t = typeof l === "string" ? { cls: "", text: l } : l;
      const te = el("text", { class: ("line " + t.cls).trim(), x: 10, y: TOP + i * LINE }, sg, t.text);
      if (t.title) el("title", {}, te, t.title);
    });
    // History: items/s, and how full the input queue was.
    const rates = s.items_per_second_history || [], fills = s.queue_fill_history || [];
    const top = Math.max(0, ...rates.filter((v) => v !== null));
    let y = nodeH - 14 - CHART_H - (source ? 0 : FILL_H + 14) - 12;
    const h = el("g", { class: "history", "data-points": rates.length }, sg);
    el("text", { class: "axis", x: 10, y: y - 3 }, h, `items/s, last ${span(rates.length)}`);
    el("text", { class: "axis", x: NODE_W - 10, y: y - 3, "text-anchor": "end" }, h, `max ${count(top)}`);
    chart(h, y, CHART_H, rates, top, "rate");
    if (!source) {
      y += CHART_H + 14;
      el("text", { class: "axis", x: 10, y: y - 3 }, h, "input queue fill");
      chart(h, y, FILL_H, fills, 1, "fill");
    }
    // Utilisation bar along the bottom edge.
    el("rect", { x: 0, y: nodeH - 5, width: NODE_W * Math.min(1, s.utilization), height: 5, fill: "#5b7bd5", rx: 2 }, sg);
    if (s.bottleneck) {
      const f = el("g", { class: "flag" }, sg);
      el("rect", { x: NODE_W / 2 - 52, y: -11, width: 104, height: 18, rx: 9 }, f);
      el("text", { x: NODE_W / 2, y: 2, "text-anchor": "middle" }, f, "BOTTLENECK");
    }
  }

  function drawPipeline(p) {
    const sec = html("section", "pipeline");
    sec.dataset.pipeline = p.name;
    sec.dataset.id = p.id;
    const h = html("h2", "", sec, p.name);
    const state = p.error ? "failed" : p.done ? "done" : "running";
    html("span", "badge " + state, h, state);
    // Elapsed counts from the pipeline's start to now, even once it is done.
    html("span", "meta", h, p.done ? `${p.stages.length} stages`
      : `running for ${p.elapsed_seconds.toFixed(1)} s · ${p.stages.length} stages`);
    const v = html("p", "verdict" + (p.bottleneck ? " hot" : ""), sec);
    v.textContent = p.bottleneck
      ? `Bottleneck: ${p.bottleneck} — its input queue is filling and nothing after it is full.`
      : p.done ? "Done." : "No bottleneck: every stage keeps up with what reaches it.";
    if (p.error) html("pre", "error", sec, p.error);
    const feeds = new Set(p.edges.map((e) => e.from));
    // Every box of a pipeline is as tall as its tallest one needs.
    let most = 0, charts = CHART_H + 26;
    p.stages.forEach((s) => {
      const { source, lines } = stageLines(s, !feeds.has(s.name));
      most = Math.max(most, lines.length);
      if (!source) charts = CHART_H + FILL_H + 40;
    });
    const nodeH = TOP + (most - 1) * LINE + 10 + charts + 12;
    const lay = layout(p, Math.max(root.clientWidth - 30, NODE_W + 2 * PAD), nodeH);
    const wrap = html("div", "graph", sec);
    const svg = el("svg", { width: lay.width, height: lay.height, viewBox: `0 0 ${lay.width} ${lay.height}`, role: "img" }, wrap);
    el("title", {}, svg, `pipeline ${p.name}`);
    const defs = el("defs", {}, svg);
    const m = el("marker", { id: `arrow-${p.id}`, viewBox: "0 0 10 10", refX: 1, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a93a6" }, m);
    drawEdges(el("g", { class: "edges" }, svg), p, lay);
    const nodes = el("g", { class: "stages" }, svg);
    p.stages.forEach((s, i) => { if (lay.pos[i]) drawStage(nodes, s, lay.pos[i], !feeds.has(s.name), nodeH); });
    return sec;
  }

  // drawEvents lists the log's last records, newest first: time, level,
  // message and attributes as key=value.
  function drawEvents(events) {
    eventsEl.hidden = !events;
    if (!events) return;
    const items = events.slice().reverse().map((e) => {
      const li = html("li", "event " + e.level.toLowerCase());
      li.dataset.seq = e.seq;
      li.dataset.level = e.level;
      html("time", "", li, new Date(e.time).toLocaleTimeString());
      html("span", "level", li, e.level);
      html("span", "message", li, e.message);
      for (const a of e.attrs || []) {
        const at = html("span", "attr", li);
        html("span", "key", at, a.key + "=");
        html("span", "value", at, a.value);
      }
      return li;
    });
    if (items.length === 0) items.push(html("li", "empty", null, "Nothing logged yet."));
    eventList.replaceChildren(...items);
  }

  function render(view) {
    drawEvents(view.events);
    ruleEl.textContent = view.bottleneck_rule;
    const sections = view.pipelines.map(drawPipeline);
    if (sections.length === 0) {
      const empty = html("p", "empty", null, "No pipeline on this board yet.");
      sections.push(empty);
    }
    root.replaceChildren(...sections);
    updates++;
    document.body.dataset.updates = updates;
    const t = new Date(view.taken);
    statusEl.textContent = `live · ${t.toLocaleTimeString()}`;
    statusEl.className = "status live";
  }

  // The layout follows the window's width: redraw the last view when it
  // changes.
  let last = null;
  window.addEventListener("resize", () => { if (last) render(last); });
  const events = new EventSource("events");
  events.onmessage = (m) => { last = JSON.parse(m.data); render(last); };
  events.onerror = () => {
    statusEl.textContent = "disconnected — retrying (showing the last reading)";
    statusEl.className = "status lost";
  };
})();
