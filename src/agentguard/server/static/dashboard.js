// agentguard dashboard: fetches the JSON API with the bearer token (kept in sessionStorage only) and
// draws plain SVG; no third-party code, nothing loaded from outside the service.
"use strict";
const $ = (s) => document.querySelector(s);
const NS = "http://www.w3.org/2000/svg";
let token = sessionStorage.getItem("agentguard-token") || "";
// one run by URL: /dashboard?run=ID opens that run (the link is shown next to the run's title)
let selectedRun = new URLSearchParams(location.search).get("run");
let story = null;  // the selected run told in order (GET /v1/runs/{id}/story)
if (location.hash.startsWith("#token=")) {
  token = decodeURIComponent(location.hash.slice(7));
  sessionStorage.setItem("agentguard-token", token);
  history.replaceState(null, "", location.pathname + location.search);
}
function runUrl(id) { return location.pathname + "?run=" + encodeURIComponent(id); }
function selectRun(id) {
  selectedRun = id; story = null; $("#f-decision").value = ""; $("#f-guard").value = "";
  history.pushState(null, "", runUrl(id)); refresh();
}
window.addEventListener("popstate", () => { selectedRun = new URLSearchParams(location.search).get("run"); story = null; refresh(); });

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
    const c = document.createElement("td"); c.className = "mono";
    const a = document.createElement("a"); a.href = runUrl(r.run_id); a.textContent = r.run_id;
    a.addEventListener("click", (e) => { e.preventDefault(); selectRun(r.run_id); });
    c.appendChild(a); tr.appendChild(c);
    tr.appendChild(td(fmtTime(r.last_ts)));
    tr.appendChild(td(String(r.n_decisions)));
    tr.appendChild(td(Object.entries(r.decisions).map(([k, v]) => k + " " + v).join(", ")));
    const halted = (r.decisions.HALT || 0) > 0;
    tr.appendChild(td(halted ? "halted" : (r.active ? "active" : "idle"), halted ? "d-HALT" : ""));
    tr.addEventListener("click", () => selectRun(r.run_id));
    tb.appendChild(tr);
  }
  if (!selectedRun && runs.length) selectedRun = runs[0].run_id;
}

function drawRun(run) {
  $("#run-title").textContent = run.run_id; $("#run-title").href = runUrl(run.run_id);
  $("#run-link").textContent = location.origin + runUrl(run.run_id);
  const badge = $("#run-state");
  const halted = story && story.halted;
  badge.textContent = halted ? "halted" : "running or finished";
  badge.className = "badge" + (halted ? " halted" : "");
  $("#halt-reason").hidden = !halted;
  $("#halt-reason").textContent = halted ? "Halted: " + story.halt_reason : "";
  // a run of tool calls only has no risk or signal series: its charts are hidden rather than drawn empty
  $("#run-section .charts").hidden = !run.risk.length && !run.signals.length;
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
  const cur = story ? story.current_state : null;
  m.states.forEach((name, i) => {
    svg.appendChild(el("circle", { cx: pos[i][0], cy: pos[i][1], r: n <= 24 ? 13 : 6, fill: unsafe.has(i) ? "#c62828" : (i === m.initial ? "#1f6feb" : "#8fb3ff"), stroke: "#1d2330" }));
    if (i === cur) svg.appendChild(el("ellipse", { id: "dtmc-current", cx: pos[i][0], cy: pos[i][1], rx: 20, ry: 20, fill: "none", stroke: "#b26a00", "stroke-width": 4 }));
    // labels outside the ring, along the radius, so neighbours do not overlap
    const a = 2 * Math.PI * i / n - Math.PI / 2, lx = cx + (rad + 26) * Math.cos(a), ly = cy + (rad + 26) * Math.sin(a) + 4;
    if (n <= 24 || unsafe.has(i) || i === m.initial || i === cur) svg.appendChild(el("text", { x: lx, y: ly, "text-anchor": Math.cos(a) > 0.3 ? "start" : (Math.cos(a) < -0.3 ? "end" : "middle"), "font-size": 10, class: "mono" }, name));
  });
  div.appendChild(svg);
  const lg = $("#dtmc-legend"); lg.textContent = "";
  const item = (color, text, ring) => { const li = document.createElement("li"); const sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = ring ? "transparent" : color; if (ring) sw.style.border = "3px solid " + color; li.appendChild(sw); li.appendChild(document.createTextNode(text)); lg.appendChild(li); };
  item("#1f6feb", "initial state (" + m.states[m.initial] + ")");
  item("#c62828", "unsafe: the property the guard keeps the run away from");
  item("#8fb3ff", "other states");
  if (cur !== null && cur !== undefined) item("#b26a00", "this run is in state " + m.states[cur] + " now", true);
  const meanings = (story && story.state_meanings) || Object.fromEntries(Object.entries(m.labels || {}).flatMap(([k, v]) => v.map((i) => [i, [k]])));
  m.states.forEach((name, i) => { const labs = meanings[String(i)] || []; if (labs.length) { const li = document.createElement("li"); li.className = "mono"; li.textContent = name + ": " + labs.join(", "); lg.appendChild(li); } });
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
  $("#guards-desc").textContent = c.description || "";
}

function fillSelect(sel, values) {
  const keep = sel.value; const opts = ["", ...values];
  if ([...sel.options].map((o) => o.value).join("|") !== opts.join("|")) {
    sel.textContent = "";
    for (const v of opts) { const o = document.createElement("option"); o.value = v; o.textContent = v || "all"; sel.appendChild(o); }
  }
  sel.value = opts.includes(keep) ? keep : "";
}
function callName(a) {
  if (a === null || a === undefined) return "—";
  if (typeof a === "string") return a;
  return a.name || JSON.stringify(a);
}
function callArgs(e) {
  const a = e.action;
  let text = (a && typeof a === "object" && a.name) ? JSON.stringify(a.arguments || {}) : "";
  if (e.state !== null && e.state !== undefined) text += (text ? "  " : "") + "[state " + JSON.stringify(e.state) + "]";
  return text || "—";
}
function verdictsCell(e) {
  const c = document.createElement("td"); c.className = "verdicts";
  for (const v of e.verdicts || []) {
    const d = document.createElement("div");
    const b = document.createElement("span"); b.className = "d-" + v.decision; b.textContent = v.decision;
    d.appendChild(document.createTextNode(v.guard + ": ")); d.appendChild(b);
    d.appendChild(document.createTextNode(v.reason && v.reason !== "allowed" ? " — " + v.reason : ""));
    c.appendChild(d);
  }
  for (const w of e.shadow || []) {  // would-be verdicts of guards in shadow mode (they changed nothing)
    const d = document.createElement("div"); d.className = "shadow";
    d.textContent = "shadow: " + w.guard + " would " + w.decision + (w.reason ? " — " + w.reason : "");
    c.appendChild(d);
  }
  return c;
}
function drawStory() {
  const tb = $("#decisions tbody"); tb.textContent = "";
  if (!story) return;
  fillSelect($("#f-decision"), story.decisions); fillSelect($("#f-guard"), story.guard_names);
  const fd = $("#f-decision").value, fg = $("#f-guard").value;
  const rows = story.events.filter((e) => (!fd || e.decision === fd) && (!fg || e.guard === fg));
  $("#story-count").textContent = rows.length + " of " + story.events.length + " decisions";
  for (const e of rows) {
    const tr = document.createElement("tr"); tr.dataset.decision = e.decision_id || "";
    tr.appendChild(td(String(e.i + 1))); tr.appendChild(td(fmtTime(e.ts))); tr.appendChild(td(e.kind));
    tr.appendChild(td(callName(e.action), "action call")); tr.appendChild(td(callArgs(e), "action args"));
    tr.appendChild(td(e.decision, "d-" + e.decision));
    tr.appendChild(verdictsCell(e));
    tr.appendChild(td(e.approver || (e.kind === "approval" ? e.guard : "—"), "approver"));
    tr.appendChild(td(Object.entries(e.numbers).map(([k, v]) => k + "=" + Number(v).toPrecision(3)).join(" ")));
    tb.appendChild(tr);
  }
  const box = $("#stack-words"); box.textContent = "";
  for (const [kind, lines] of Object.entries(story.guards)) {
    const h = document.createElement("p"); h.className = "muted"; h.textContent = { tool: "tool calls (/v1/check):", step: "steps (/v1/runs/{id}/steps):", signal: "signals (/v1/runs/{id}/signals):" }[kind] || kind; box.appendChild(h);
    for (const l of lines) { const p = document.createElement("p"); p.textContent = l; box.appendChild(p); }
  }
}
$("#f-decision").addEventListener("change", drawStory);
$("#f-guard").addEventListener("change", drawStory);

async function refresh() {
  try {
    const [runs, model, calib] = await Promise.all([api("/v1/runs?limit=20"), api("/v1/model"), api("/v1/calibration")]);
    drawRuns(runs.runs);
    if (selectedRun) {
      const id = encodeURIComponent(selectedRun);
      const [run, st] = await Promise.all([api("/v1/runs/" + id), api("/v1/runs/" + id + "/story")]);
      story = st; drawRun(run); drawStory();
    }
    // panels with nothing to show are hidden rather than drawn empty
    $("#model-section").hidden = !model.model; if (model.model) drawModel(model.model);
    $("#calib-section").hidden = !Object.keys(calib.curves || {}).length; drawCalibration(calib);
    drawRuns(runs.runs);
    $("#status").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "1";
  } catch (e) { if (e.message !== "unauthorised") $("#status").textContent = "error: " + e.message; }
}
if (token) refresh(); else askToken();
setInterval(() => { if (token) refresh(); }, 5000);
