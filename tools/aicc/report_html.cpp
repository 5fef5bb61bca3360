// The compile report as one self-contained HTML page (`aicc report DIR`, `aicc compile
// --report-html FILE`, `aicc bench DIR --profile --report-html FILE`). The page embeds
// DIR/report.json (tasks with op, schedule, chosen and considered kernels, cost-model flops / bytes
// / estimate, arena bindings) and, from bench, the measured time per task and this machine's
// measured peaks; its script draws the task table (fused groups, kernels, estimated vs measured
// time), the arena use per task, and a roofline. No external resources: it opens offline.
#include "commands.h"
#include "support/file.h"

#include "frontend/onnx/tensor_proto.h"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace aicc::cli {

namespace {

// JSON text made safe inside <script>: "</" only occurs inside strings, where "<\/" means the same.
std::string scriptSafe(const std::string& json) {
  std::string o;
  for (size_t i = 0; i < json.size(); ++i) {
    o += json[i];
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') o += '\\';
  }
  return o;
}

constexpr const char* kPage = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>aicc report</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 20px; color: #222; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin-top: 28px; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
th { cursor: pointer; background: #f4f4f4; position: sticky; top: 0; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.fused td.op { color: #7a3d00; font-weight: 600; } tr.fallback td.op { color: #b00; font-weight: 600; }
.bar { background: #4a7bd0; height: 10px; display: inline-block; }
.small { color: #666; font-size: 11px; } .kv td { border: none; padding: 1px 10px 1px 0; }
svg text { font: 10px sans-serif; }
</style></head><body>
<h1 id="title">aicc report</h1>
<table class="kv" id="summary"></table>
<h2>Roofline</h2>
<p class="small" id="roofnote"></p>
<div id="roof"></div>
<h2>Arena use per task</h2>
<p class="small">x: task (execution order); y: arena offset. Each bar is a buffer the task reads or writes. The arena is planned
once at compile time; its size is the run's whole working memory besides the weights.</p>
<div id="arena"></div>
<h2>Tasks, in execution order</h2>
<p class="small">Fused groups show their members (<code>Fused(Conv+Add+Relu)</code>). <i>kernel</i> is the candidate chosen,
<i>considered</i> the cost model's estimates of the others. Measured time comes from <code>aicc bench DIR --profile --report-html</code>.
Click a column to sort.</p>
<table id="tasks"><thead></thead><tbody></tbody></table>
<script>
const REPORT = @REPORT@;
const PROFILE = @PROFILE@;
(function () {
  const $ = (id) => document.getElementById(id);
  const fmt = (x, d = 3) => (x === undefined || x === null || isNaN(x)) ? "" : Number(x).toFixed(d);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  $("title").textContent = "aicc report: " + REPORT.model;
  const summary = [["target", REPORT.target], ["tasks", REPORT.tasks.length], ["fallbacks", REPORT.fallbacks],
    ["arena", (REPORT.arena_bytes / 1048576).toFixed(2) + " MiB (lower bound " + (REPORT.lower_bound_bytes / 1048576).toFixed(2) + ")"],
    ["weights", (REPORT.weights_bytes / 1048576).toFixed(2) + " MiB"], ["shared library", REPORT.shared_library_bytes + " bytes"],
    ["compile", Object.entries(REPORT.phases_s).map(([k, v]) => k + " " + fmt(v, 2) + " s").join(", ")]];
  if (PROFILE) summary.push(["measured", fmt(PROFILE.median_ms) + " ms median over " + PROFILE.runs + " runs, " + PROFILE.threads + " thread(s)"]);
  $("summary").innerHTML = summary.map(([k, v]) => "<tr><td>" + esc(k) + "</td><td>" + esc(v) + "</td></tr>").join("");

  const attr = (sched, key) => { const m = sched.match(new RegExp(key + ' = "([^"]*)"')); return m ? m[1] : ""; };
  const rows = REPORT.tasks.map((t, i) => {
    const ms = PROFILE && PROFILE.tasks[t.node] !== undefined ? PROFILE.tasks[t.node] : null;
    const sel = attr(t.schedule, "selection");
    const considered = sel.includes(";") ? sel.slice(sel.indexOf(";") + 1).trim() : "";
    const m = t.node.match(/^node '(.*)' \(/);
    return { i, node: m ? m[1] : t.node, op: t.op, kernel: attr(t.schedule, "candidate") || attr(t.schedule, "micro_kernel"),
      considered, est: t.est_s * 1e3, ms, gflop: t.flops / 1e9, mb: t.bytes / 1e6,
      rate: ms ? t.flops / (ms * 1e6) : null, gbs: ms && t.bytes ? t.bytes / (ms * 1e6) : null, fused: t.op.startsWith("Fused("), fallback: /fallback/.test(t.schedule) };
  });
  const total = rows.reduce((s, r) => s + (r.ms || 0), 0);
  const cols = [["#", "i", 0], ["node", "node"], ["op", "op"], ["kernel", "kernel"], ["est. ms", "est", 3],
    ["measured ms", "ms", 3], ["share", "ms", -1], ["GFLOP", "gflop", 3], ["MB", "mb", 2], ["GFLOP/s", "rate", 1], ["GB/s", "gbs", 1], ["considered (est.)", "considered"]];
  let order = null, dir = 1;
  function draw() {
    const list = rows.slice();
    if (order) list.sort((a, b) => { const x = a[order], y = b[order]; return (x === y ? 0 : x === null ? 1 : y === null ? -1 : x < y ? -1 : 1) * dir; });
    $("tasks").tHead.innerHTML = "<tr>" + cols.map(([h, k], j) => '<th data-k="' + k + '">' + esc(h) + "</th>").join("") + "</tr>";
    $("tasks").tBodies[0].innerHTML = list.map((r) => '<tr class="' + (r.fused ? "fused" : "") + (r.fallback ? " fallback" : "") + '">' +
      cols.map(([h, k, d]) => d === -1 ? '<td><span class="bar" style="width:' + (total && r.ms ? 200 * r.ms / total : 0) + 'px"></span></td>'
        : d !== undefined ? '<td class="n">' + (r[k] === null ? "" : fmt(r[k], d)) + "</td>"
        : '<td class="' + k + '">' + esc(r[k]) + "</td>").join("") + "</tr>").join("");
    for (const th of $("tasks").tHead.querySelectorAll("th"))
      th.onclick = () => { const k = th.dataset.k; dir = order === k ? -dir : 1; order = k; draw(); };
  }
  draw();

  const NS = "http://www.w3.org/2000/svg";
  const svg = (w, h) => { const s = document.createElementNS(NS, "svg"); s.setAttribute("width", w); s.setAttribute("height", h); return s; };
  const el = (s, name, a, text) => { const e = document.createElementNS(NS, name); for (const k in a) e.setAttribute(k, a[k]); if (text !== undefined) e.textContent = text; s.appendChild(e); return e; };

  // Arena: one column per task, one rect per binding.
  const A = Math.max(1, REPORT.arena_bytes), W = 900, H = 260, L = 60;
  const sa = svg(W + L + 10, H + 30), n = Math.max(1, rows.length), cw = W / n;
  el(sa, "rect", { x: L, y: 0, width: W, height: H, fill: "#fafafa", stroke: "#ccc" });
  REPORT.tasks.forEach((t, i) => (t.arena || []).forEach(([off, bytes]) => {
    const r = el(sa, "rect", { x: L + i * cw, y: H * off / A, width: Math.max(1, cw - 1), height: Math.max(1, H * bytes / A),
      fill: rows[i].fused ? "#d08a4a" : "#4a7bd0", opacity: 0.75 });
    el(r, "title", {}, t.node + ": " + bytes + " bytes at " + off);
  }));
  el(sa, "text", { x: 2, y: 10 }, "0");
  el(sa, "text", { x: 2, y: H }, (A / 1048576).toFixed(1) + " MiB");
  el(sa, "text", { x: L, y: H + 20 }, "task 0");
  el(sa, "text", { x: L + W - 40, y: H + 20 }, "task " + (n - 1));
  $("arena").appendChild(sa);

  // Roofline: log-log, arithmetic intensity vs GFLOP/s, the measured roofs.
  const pts = rows.filter((r) => r.rate && r.mb > 0 && r.gflop > 0);
  if (!PROFILE || !pts.length) {
    $("roofnote").textContent = "Needs measured times: aicc bench DIR --profile --report-html FILE.";
  } else {
    const peak = PROFILE.peak_gflops, bw = PROFILE.peak_gbs;
    $("roofnote").textContent = "Measured on this machine by aicc bench: FMA peak " + fmt(peak, 1) + " GFLOP/s (" + PROFILE.threads +
      " thread(s), the GEMM register tile on L1-resident data), copy bandwidth " + fmt(bw, 1) + " GB/s. Points: tasks with a cost model (flops and compulsory bytes).";
    const RW = 700, RH = 360, x0 = 60, y0 = 10;
    const lx = (v) => x0 + RW * (Math.log10(v) + 2) / 5;      // intensity 0.01 .. 1000
    const ly = (v) => y0 + RH * (1 - (Math.log10(v) + 1) / 5); // 0.1 .. 10^4 GFLOP/s
    const sr = svg(x0 + RW + 20, RH + 50);
    el(sr, "rect", { x: x0, y: y0, width: RW, height: RH, fill: "#fafafa", stroke: "#ccc" });
    for (let e = -2; e <= 3; e++) el(sr, "text", { x: lx(10 ** e) - 8, y: y0 + RH + 14 }, String(10 ** e));
    for (let e = -1; e <= 4; e++) el(sr, "text", { x: 4, y: ly(10 ** e) + 3 }, String(10 ** e));
    el(sr, "text", { x: x0 + RW / 2 - 80, y: y0 + RH + 30 }, "FLOP per byte (compulsory traffic)");
    const ridge = peak / bw, path = [];
    for (let e = -2; e <= 3; e += 0.05) { const ai = 10 ** e; path.push(lx(ai) + "," + ly(Math.min(peak, bw * ai))); }
    el(sr, "polyline", { points: path.join(" "), fill: "none", stroke: "#b00", "stroke-width": 1.5 });
    el(sr, "text", { x: lx(Math.min(100, ridge * 3)), y: ly(peak) - 4 }, "peak " + fmt(peak, 0) + " GFLOP/s");
    for (const r of pts) {
      const c = el(sr, "circle", { cx: lx(r.gflop / r.mb * 1e3), cy: ly(r.rate), r: 3 + 8 * Math.sqrt((r.ms || 0) / (total || 1)),
        fill: r.fused ? "#d08a4a" : "#4a7bd0", opacity: 0.7 });
      el(c, "title", {}, r.node + ": " + fmt(r.rate, 1) + " GFLOP/s, " + fmt(r.ms) + " ms");
    }
    $("roof").appendChild(sr);
  }
  document.body.dataset.rendered = "yes"; // the headless-browser test looks for this
})();
</script></body></html>
)HTML";

} // namespace

void writeReportHtml(const std::string& dir, const std::string& out, const std::string& profile) {
  const std::filesystem::path rj = std::filesystem::path(dir) / "report.json";
  AICC_CHECK(std::filesystem::exists(rj),
             "'{}' has no report.json (a folder written by aicc compile --emit so)", dir);
  std::string page = kPage;
  auto put = [&](const std::string& key, const std::string& value) {
    const size_t at = page.find(key);
    page.replace(at, key.size(), value);
  };
  put("@REPORT@", scriptSafe(readFile(rj.string())));
  put("@PROFILE@", profile.empty() ? "null" : scriptSafe(profile));
  std::ofstream f(out);
  AICC_CHECK(f.good(), "cannot write '{}'", out);
  f << page;
  AICC_CHECK(f.good(), "cannot write '{}'", out);
}

int reportCommand(const ReportArgs& a) {
  const std::string out =
      a.output.empty() ? (std::filesystem::path(a.dir) / "report.html").string() : a.output;
  writeReportHtml(a.dir, out, "");
  std::cout << "wrote " << out << "\n";
  return 0;
}

} // namespace aicc::cli
