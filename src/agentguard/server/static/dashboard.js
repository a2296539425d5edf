// agentguard dashboard: fetches the JSON API with the bearer token (kept in sessionStorage only) and
// draws plain SVG; no third-party code, nothing loaded from outside the service.
"use strict";
const $ = (s) => document.querySelector(s);
const NS = "http://www.w3.org/2000/svg";
let token = sessionStorage.getItem("agentguard-token") || "";
let selectedRun = null;
if (location.hash.startsWith("#token=")) {
  token = decodeURIComponent(location.hash.slice(7));
  sessionStorage.setItem("agentguard-token", token);
  history.replaceState(null, "", location.pathname + location.search);
}

async function api(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + token } });
  if (r.status === 401) { askToken(); throw new Error("unauthorised"); }
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}
function askToken() { $("#tokenform").hidden = false; $("#status").textContent = "token needed"; }
$("#tokenform").addEventListener("submit", (e) => {
  e.preventDefault(); token = $("#token").value; sessionStorage.setItem("agentguard-token", token);
  $("#tokenform").hidden = true; refresh();
});

function el(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function td(text, cls) { const c = document.createElement("td"); c.textContent = text; if (cls) c.className = cls; return c; }
function fmtTime(ts) { return new Date(ts * 1000).toISOString().replace("T", " ").slice(0, 19); }

// A line chart: series [{points:[[x,y]], color, dash, label}], y range [0,1] unless data says otherwise.
function lineChart(div, series, opts) {
  div.textContent = "";
  const W = 520, H = 220, L = 42, R = 10, T = 12, B = 28;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  const pts = series.flatMap((s) => s.points).filter((p) => p[1] !== null && p[1] !== undefined);
  if (!pts.length) { svg.appendChild(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#7a8294" }, opts.empty || "no data yet")); div.appendChild(svg); return; }
  let [x0, x1] = [Math.min(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[0]))];
  let [y0, y1] = opts.y || [Math.min(0, ...pts.map((p) => p[1])), Math.max(1, ...pts.map((p) => p[1]))];
  if (x1 === x0) x1 = x0 + 1;
  const sx = (x) => L + (x - x0) / (x1 - x0) * (W - L - R), sy = (y) => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const y = y0 + (y1 - y0) * i / 4;
    svg.appendChild(el("line", { x1: L, x2: W - R, y1: sy(y), y2: sy(y), stroke: "#e3e6eb" }));
    svg.appendChild(el("text", { x: L - 4, y: sy(y) + 4, "text-anchor": "end", "font-size": 10, fill: "#4a5263" }, y.toFixed(2)));
  }
  svg.appendChild(el("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", "font-size": 11, fill: "#4a5263" }, opts.xlabel || "step"));
  let ly = T + 10;
  for (const s of series) {
    const p = s.points.filter((q) => q[1] !== null && q[1] !== undefined);
    if (!p.length) continue;
    const d = p.map((q, i) => (i ? "L" : "M") + sx(q[0]).toFixed(1) + " " + sy(q[1]).toFixed(1)).join(" ");
    svg.appendChild(el("path", { d, fill: "none", stroke: s.color, "stroke-width": 2, "stroke-dasharray": s.dash || "" }));
    if (s.marks) for (const q of p) if (q[2]) svg.appendChild(el("circle", { cx: sx(q[0]), cy: sy(q[1]), r: 4, fill: "#c62828" }));
    svg.appendChild(el("text", { x: W - R - 4, y: ly, "text-anchor": "end", "font-size": 11, fill: s.color }, s.label));
    ly += 14;
  }
  div.appendChild(svg);
}

function drawRuns(runs) {
  const tb = $("#runs tbody"); tb.textContent = "";
  for (const r of runs) {
    const tr = document.createElement("tr");
    if (r.run_id === selectedRun) tr.className = "sel";
    tr.appendChild(td(r.run_id, "mono"));
    tr.appendChild(td(fmtTime(r.last_ts)));
    tr.appendChild(td(String(r.n_decisions)));
    tr.appendChild(td(Object.entries(r.decisions).map(([k, v]) => k + " " + v).join(", ")));
    tr.appendChild(td(r.active ? "active" : "idle"));
    tr.addEventListener("click", () => { selectedRun = r.run_id; refresh(); });
    tb.appendChild(tr);
  }
  if (!selectedRun && runs.length) selectedRun = runs[0].run_id;
}

function drawRun(run) {
  $("#run-title").textContent = run.run_id;
  lineChart($("#risk-chart"), [
    { points: run.risk.map((r) => [r.step, r.risk, r.decision !== "ALLOW"]), color: "#1f6feb", label: "probability (guard)", marks: true },
    { points: run.risk.map((r) => [r.step, r.threshold]), color: "#c62828", dash: "6 4", label: "threshold" },
  ], { y: [0, 1], empty: "no steps with a risk estimate" });
  lineChart($("#signal-chart"), [
    { points: run.signals.map((s) => [s.t, s.value, s.decision !== "ALLOW"]), color: "#1a7f37", label: "signal", marks: true },
    { points: run.signals.map((s) => [s.t, s.threshold]), color: "#c62828", dash: "6 4", label: "threshold" },
  ], { empty: "no signals streamed", xlabel: "time step" });
}

function drawModel(m) {
  const div = $("#dtmc-graph"); div.textContent = "";
  const tb = $("#dtmc-table tbody"); tb.textContent = "";
  const W = 520, H = 320;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}` });
  if (!m) { svg.appendChild(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#7a8294" }, "no DTMC loaded")); div.appendChild(svg); return; }
  const unsafe = new Set(m.unsafe);
  const n = m.n, cx = W / 2, cy = H / 2, rad = Math.min(W, H) / 2 - 40;
  const pos = m.states.map((_, i) => [cx + rad * Math.cos(2 * Math.PI * i / n - Math.PI / 2), cy + rad * Math.sin(2 * Math.PI * i / n - Math.PI / 2)]);
  const defs = el("defs"); const mk = el("marker", { id: "arr", viewBox: "0 0 10 10", refX: 18, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" });
  mk.appendChild(el("path", { d: "M0 0 L10 5 L0 10 z", fill: "#7a8294" })); defs.appendChild(mk); svg.appendChild(defs);
  for (const [i, j, p] of m.edges) {
    if (i === j) continue;
    const [a, b] = [pos[i], pos[j]];
    svg.appendChild(el("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: "#7a8294", "stroke-width": 0.5 + 3 * p, "marker-end": "url(#arr)", opacity: 0.35 + 0.65 * p }));
    if (n <= 12) svg.appendChild(el("text", { x: (a[0] * 0.4 + b[0] * 0.6), y: (a[1] * 0.4 + b[1] * 0.6) - 3, "font-size": 10, fill: "#1d2330" }, p.toFixed(2)));
  }
  m.states.forEach((name, i) => {
    svg.appendChild(el("circle", { cx: pos[i][0], cy: pos[i][1], r: n <= 24 ? 13 : 6, fill: unsafe.has(i) ? "#c62828" : (i === m.initial ? "#1f6feb" : "#8fb3ff"), stroke: "#1d2330" }));
    if (n <= 24 || unsafe.has(i) || i === m.initial) svg.appendChild(el("text", { x: pos[i][0], y: pos[i][1] + 26, "text-anchor": "middle", "font-size": 10, class: "mono" }, name));
  });
  div.appendChild(svg);
  const edges = [...m.edges].sort((a, b) => b[2] - a[2]).slice(0, 30);
  for (const [i, j, p] of edges) {
    const tr = document.createElement("tr");
    tr.appendChild(td(m.states[i] + (unsafe.has(i) ? " (unsafe)" : ""), "mono"));
    tr.appendChild(td(m.states[j] + (unsafe.has(j) ? " (unsafe)" : ""), "mono"));
    tr.appendChild(td(p.toFixed(4))); tb.appendChild(tr);
  }
}

function drawCalibration(c) {
  const box = $("#calib-charts"); box.textContent = "";
  const curves = Object.entries(c.curves || {});
  if (!curves.length) { const p = document.createElement("p"); p.className = "muted"; p.textContent = "no calibration curves loaded"; box.appendChild(p); }
  for (const [name, cv] of curves) {
    const fig = document.createElement("figure"); const cap = document.createElement("figcaption");
    cap.textContent = name + (cv.ylabel ? " — " + cv.ylabel + " vs " + (cv.xlabel || "x") : ""); fig.appendChild(cap);
    const d = document.createElement("div"); d.className = "chart"; fig.appendChild(d); box.appendChild(fig);
    const series = [{ points: cv.x.map((x, i) => [x, cv.y[i]]), color: "#1f6feb", label: cv.ylabel || name }];
    if (cv.target !== undefined && cv.target !== null) series.push({ points: cv.x.map((x) => [x, cv.target]), color: "#c62828", dash: "6 4", label: "target" });
    if (cv.diagonal) series.push({ points: cv.x.map((x) => [x, x]), color: "#7a8294", dash: "3 3", label: "y = x" });
    lineChart(d, series, { xlabel: cv.xlabel || "x", y: cv.y_range });
  }
  $("#guards-desc").textContent = "guards: " + (c.description || "") + " · tool: " + c.guards.tool;
}

function drawDecisions(ds) {
  const tb = $("#decisions tbody"); tb.textContent = "";
  for (const d of ds.slice().reverse()) {
    const tr = document.createElement("tr");
    tr.appendChild(td(fmtTime(d.ts))); tr.appendChild(td(d.run_id, "mono")); tr.appendChild(td(d.kind));
    tr.appendChild(td(d.guard)); tr.appendChild(td(d.decision, "d-" + d.decision)); tr.appendChild(td(d.reason));
    tr.appendChild(td(Object.entries(d.numbers).map(([k, v]) => k + "=" + Number(v).toPrecision(3)).join(" ")));
    tr.addEventListener("click", () => { selectedRun = d.run_id; refresh(); });
    tb.appendChild(tr);
  }
}

async function refresh() {
  try {
    const [runs, decisions, model, calib] = await Promise.all([api("/v1/runs?limit=20"), api("/v1/decisions?limit=40"), api("/v1/model"), api("/v1/calibration")]);
    drawRuns(runs.runs); drawDecisions(decisions.decisions); drawModel(model.model); drawCalibration(calib);
    if (selectedRun) drawRun(await api("/v1/runs/" + encodeURIComponent(selectedRun)));
    drawRuns(runs.runs);
    $("#status").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "1";
  } catch (e) { if (e.message !== "unauthorised") $("#status").textContent = "error: " + e.message; }
}
if (token) refresh(); else askToken();
setInterval(() => { if (token) refresh(); }, 5000);
