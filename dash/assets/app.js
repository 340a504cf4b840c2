// The live pipeline page: draws each pipeline of every View that arrives on
// the "events" stream as an SVG graph. Everything it shows is computed by
// the server (see package dash); this script only lays it out.
"use strict";

(() => {
  const NS = "http://www.w3.org/2000/svg";
  const NODE_W = 220, NODE_H = 128, GAP_X = 120, GAP_Y = 34, PAD = 26;

  const statusEl = document.getElementById("status");
  const ruleEl = document.getElementById("rule");
  const root = document.getElementById("pipelines");
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

  // layout puts each stage in the column of its longest path from a source,
  // and stacks the stages of a column, centred.
  function layout(p) {
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
    const rows = Math.max(1, ...cols.map((c) => (c ? c.length : 0)));
    const height = 2 * PAD + rows * NODE_H + (rows - 1) * GAP_Y;
    const pos = [];
    cols.forEach((c, x) => {
      if (!c) return;
      const h = c.length * NODE_H + (c.length - 1) * GAP_Y;
      c.forEach((i, k) => {
        pos[i] = { x: PAD + x * (NODE_W + GAP_X), y: (height - h) / 2 + k * (NODE_H + GAP_Y) };
      });
    });
    const width = 2 * PAD + cols.length * NODE_W + Math.max(0, cols.length - 1) * GAP_X;
    return { pos, links, width, height };
  }

  function drawEdges(g, p, lay) {
    const outs = new Map(), ins = new Map();
    for (const l of lay.links) {
      outs.set(l.a, (outs.get(l.a) || []).concat(l));
      ins.set(l.b, (ins.get(l.b) || []).concat(l));
    }
    const port = (list, l, y) => {
      const k = list.indexOf(l), n = list.length;
      return y + NODE_H * (k + 1) / (n + 1);
    };
    for (const l of lay.links) {
      const e = l.e, from = lay.pos[l.a], to = lay.pos[l.b];
      const x1 = from.x + NODE_W, y1 = port(outs.get(l.a), l, from.y);
      const x2 = to.x, y2 = port(ins.get(l.b), l, to.y);
      const dx = (x2 - x1) / 2;
      const c = colour(e.fill);
      const eg = el("g", { class: "edge", "data-from": e.from, "data-to": e.to, "data-fill": e.fill.toFixed(3) }, g);
      el("path", {
        d: `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2 - 7},${y2}`,
        stroke: c, "marker-end": `url(#arrow-${p.id})`,
      }, eg);
      const mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
      const q = el("g", { class: "queue" }, eg);
      const bw = 76, bh = 12;
      el("rect", { class: "track", x: mx - bw / 2, y: my - bh / 2, width: bw, height: bh, rx: 2 }, q);
      el("rect", { x: mx - bw / 2, y: my - bh / 2, width: Math.max(e.depth > 0 ? 2 : 0, bw * e.fill), height: bh, rx: 2, fill: c }, q);
      el("text", { x: mx, y: my - bh / 2 - 4, "text-anchor": "middle" }, q,
        `${count(e.depth)} / ${count(e.capacity)} (${Math.round(e.fill * 100)}%)`);
      el("text", { x: mx, y: my + bh / 2 + 12, "text-anchor": "middle" }, q, `${count(e.per_second)}/s`);
      if (e.dropped > 0) {
        el("text", { class: "drops", x: mx, y: my + bh / 2 + 25, "text-anchor": "middle" }, q,
          `dropped ${count(e.dropped)} (${e.policy})`);
      }
    }
  }

  function drawStage(g, s, at, sink) {
    const sg = el("g", {
      class: "stage" + (s.bottleneck ? " bottleneck" : ""),
      transform: `translate(${at.x},${at.y})`,
      "data-stage": s.name, "data-in": s.in, "data-out": s.out,
      "data-bottleneck": String(s.bottleneck),
    }, g);
    el("rect", { class: "box", width: NODE_W, height: NODE_H, rx: 7 }, sg);
    el("text", { class: "name", x: 10, y: 19 }, sg, s.name);
    el("text", { class: "kind", x: NODE_W - 10, y: 19, "text-anchor": "end" }, sg, s.kind);
    const source = s.queue_capacity === 0;
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
    const busy = `busy ${Math.round(s.utilization * 100)}%`;
    lines.push(source ? `${busy} of the time` : `${busy} · chunks of ${count(s.chunk_size)}`);
    if (!source) {
      lines.push(s.latency_samples === 0 ? "latency: no sample yet"
        : `latency p50 ${secs(s.latency_p50_seconds)} · p99 ${secs(s.latency_p99_seconds)}`);
    }
    lines.forEach((t, i) => el("text", { class: "line", x: 10, y: 40 + i * 16 }, sg, t));
    el("text", { class: "line" + (s.dropped > 0 ? " drops" : ""), x: 10, y: 40 + lines.length * 16 }, sg,
      `dropped ${count(s.dropped)}`);
    // Utilisation bar along the bottom edge.
    el("rect", { x: 0, y: NODE_H - 5, width: NODE_W * Math.min(1, s.utilization), height: 5, fill: "#5b7bd5", rx: 2 }, sg);
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
    const lay = layout(p);
    const wrap = html("div", "graph", sec);
    const svg = el("svg", { width: lay.width, height: lay.height, viewBox: `0 0 ${lay.width} ${lay.height}`, role: "img" }, wrap);
    el("title", {}, svg, `pipeline ${p.name}`);
    const defs = el("defs", {}, svg);
    const m = el("marker", { id: `arrow-${p.id}`, viewBox: "0 0 10 10", refX: 1, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a93a6" }, m);
    drawEdges(el("g", { class: "edges" }, svg), p, lay);
    const nodes = el("g", { class: "stages" }, svg);
    const feeds = new Set(p.edges.map((e) => e.from));
    p.stages.forEach((s, i) => { if (lay.pos[i]) drawStage(nodes, s, lay.pos[i], !feeds.has(s.name)); });
    return sec;
  }

  function render(view) {
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

  const events = new EventSource("events");
  events.onmessage = (m) => render(JSON.parse(m.data));
  events.onerror = () => {
    statusEl.textContent = "disconnected — retrying (showing the last reading)";
    statusEl.className = "status lost";
  };
})();
