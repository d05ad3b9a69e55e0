"""The report's stylesheet: how its charts, tables, heat maps and error spans look. The report
inlines it (:mod:`assay.report.page`); the served app (:mod:`assay.serve`) serves it as
``/static/report.css`` under its own, so both draw the same marks the same way."""

__all__ = ["CSS"]

CSS = """
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; --accent:#0969da; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin:0; color:var(--ink); background:#fff; line-height:1.5;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "DejaVu Sans",
        Arial, sans-serif; }
header.top { background:linear-gradient(180deg,#f6f8fa,#fff); border-bottom:1px solid var(--line); }
.wrap { max-width:1180px; margin:0 auto; padding:0 28px; }
header.top .wrap { padding-top:26px; padding-bottom:18px; }
h1 { font-size:28px; margin:0 0 4px; letter-spacing:-0.01em; }
h1 small { font-weight:400; color:var(--muted); font-size:17px; }
.meta { color:var(--muted); font-size:13px; margin:0; }
.meta code { font-size:12px; }
.stats { display:flex; gap:10px; flex-wrap:wrap; margin:14px 0 6px; }
.stat { border:1px solid var(--line); border-radius:8px; padding:6px 12px; background:#fff; font-size:13px; }
.stat b { font-size:18px; display:block; line-height:1.2; }
nav.toc { margin-top:10px; font-size:14px; display:flex; flex-wrap:wrap; gap:4px 18px; }
nav.toc a { color:var(--accent); text-decoration:none; }
nav.toc a:hover { text-decoration:underline; }
main section { padding:26px 0 8px; border-bottom:1px solid var(--line); }
h2 { font-size:21px; margin:0 0 6px; }
h2 .num { color:var(--muted); font-weight:400; margin-right:6px; }
h3 { font-size:17px; margin:22px 0 8px; }
h4 { font-size:14px; margin:16px 0 6px; display:flex; align-items:baseline; gap:8px; }
h4 .aspect { font-weight:400; color:var(--muted); font-size:12.5px; }
h4 i.swatch { align-self:center; }
p.lead { color:#31373d; max-width:900px; margin:4px 0 12px; }
p.note { color:var(--muted); font-size:13px; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size:0.88em;
  background:var(--soft); border-radius:4px; padding:1px 4px; word-break:break-all; }
.legend { display:flex; flex-wrap:wrap; gap:6px 16px; margin:6px 0 10px; font-size:13px; }
.legend .key { display:inline-flex; align-items:center; gap:6px; }
.legend i, i.swatch { display:inline-block; width:12px; height:12px; border-radius:3px; flex:none; }
figure.fig { margin:8px 0 18px; }
figure.fig-wide { overflow-x:auto; }
figcaption { font-size:12.5px; color:var(--muted); margin-top:4px; max-width:1000px; }
.grid { display:flex; flex-wrap:wrap; gap:6px 18px; }
.grid figure.fig { margin:4px 0 10px; }
svg.chart { display:block; max-width:100%; height:auto; font-family:inherit; overflow:visible; }
svg.chart text { fill:var(--ink); }
svg.chart .tick { font-size:11px; fill:var(--muted); font-variant-numeric:tabular-nums; }
svg.chart .label { font-size:12px; fill:#31373d; }
svg.chart .axis { stroke:#8c959f; stroke-width:1; }
svg.chart .grid { stroke:#eef1f4; stroke-width:1; }
svg.chart .zero { stroke:#59636e; stroke-width:1; }
svg.chart .panel-title, svg.chart .chart-title { font-size:13px; font-weight:600; }
svg.chart .panel-sub, svg.chart .chart-sub { font-size:11.5px; fill:var(--muted); }
svg.chart .row-label { font-size:12px; }
svg.chart .bar { opacity:0.88; }
svg.chart .whisker { stroke:#24292f; stroke-width:1.3; }
svg.chart .value { font-size:11.5px; font-variant-numeric:tabular-nums; }
svg.chart .value.top { font-weight:700; }
svg.chart .rank, svg.chart .note { font-size:11px; fill:var(--muted); }
svg.chart .hit { fill:transparent; }
svg.chart .mark:hover .hit { fill:#f1f4f8; }
svg.chart .mark:hover .bar { opacity:1; }
svg.chart .dots circle:hover { stroke:#000; stroke-width:1.5; }
svg.chart .point-label { font-size:10.5px; fill:var(--muted); }
svg.chart .line { fill:none; stroke-width:2; }
svg.chart .line.dashed { stroke-dasharray:5 4; }
svg.chart .vertex { stroke:#fff; stroke-width:1.2; }
svg.chart .vertex:hover { stroke:#000; }
svg.chart .loose { opacity:0.35; }
svg.chart .line-label { font-size:12px; font-weight:600; }
svg.chart .ref-mark { fill:#222; }
svg.chart .ref-mark.hollow { fill:#fff; stroke:#222; stroke-width:1.6; }
svg.chart .ref-label { font-size:11.5px; fill:#222; font-weight:600; }
table.data { border-collapse:collapse; font-size:13px; margin:6px 0 16px; font-variant-numeric:tabular-nums; }
table.data caption { caption-side:top; text-align:left; color:var(--muted); font-size:12.5px; padding-bottom:6px;
  max-width:1000px; }
table.data th, table.data td { border-bottom:1px solid var(--line); padding:5px 9px; text-align:right;
  white-space:nowrap; }
table.data thead th { background:var(--soft); font-weight:600; border-bottom:2px solid var(--line); }
table.data th[scope=row] { text-align:left; font-weight:500; white-space:normal; min-width:150px; max-width:260px; }
table.data thead th:first-child { text-align:left; }
.table-wrap { overflow-x:auto; max-width:100%; }
table.data th[scope=row] .swatch { margin-right:6px; vertical-align:-1px; }
table.data td.src { text-align:left; color:var(--muted); font-size:12px; }
table.data tr.assay td { font-weight:600; }
table.data tr.ref th, table.data tr.ref td { color:#3d444d; background:#fcfcfd; }
table.data tr.ref-paper td.src { color:#8250df; }
table.data tr.ref-independent td.src { color:#1a7f37; }
table.data tr.divider td { text-align:left; font-size:11px; text-transform:uppercase; letter-spacing:0.06em;
  color:var(--muted); background:#fff; padding-top:10px; }
table.data td[title]:hover, table.data tr.ref:hover td { background:#eef4fb; }
table.heatmap td.heat { text-align:center; min-width:92px; }
table.heatmap td.heat.ns { background:var(--soft); color:var(--muted); }
table.heatmap td.heat.none { color:var(--muted); }
table.heatmap .spot { font-size:10.5px; margin-left:4px; color:#82071e; font-weight:600; }
table.heatmap .verdict { font-size:12px; margin-left:3px; font-weight:700; }
table.heatmap .verdict.improved { color:#1a7f37; }
table.heatmap .verdict.worse { color:#cf222e; }
table.disagreements td.text { text-align:left; white-space:normal; vertical-align:top; min-width:220px;
  max-width:380px; font-size:12.5px; line-height:1.55; }
table.disagreements td { vertical-align:top; }
table.disagreements thead th { text-align:left; }
table.disagreements .who { color:var(--muted); font-size:11.5px; margin-bottom:2px; }
table.disagreements ul.errs { margin:4px 0 0; padding-left:16px; color:var(--muted); font-size:11.5px; }
mark { border-radius:2px; padding:0 1px; color:inherit; }
mark.sev-major { background:#ffd7d5; border-bottom:2px solid #cf222e; }
mark.sev-minor { background:#fff1c2; border-bottom:2px solid #bf8700; }
mark.sev-other { background:#eaeef2; border-bottom:2px solid #8c959f; }
table.grid-table td.default { outline:2px solid var(--accent); outline-offset:-2px; }
.empty { border:1px dashed #afb8c1; border-radius:8px; padding:10px 14px; background:#fbfcfd; max-width:900px;
  margin:8px 0 14px; }
.empty p { margin:0 0 6px; color:#31373d; }
.empty .commands code { display:block; margin:3px 0; padding:4px 8px; width:fit-content; }
sup.fn { font-size:10.5px; margin-left:2px; }
sup.fn a { color:var(--accent); text-decoration:none; }
ol.footnotes { font-size:12.5px; color:#31373d; padding-left:34px; }
ol.footnotes li { margin:3px 0; padding-left:4px; }
ol.footnotes li::marker { color:var(--muted); }
ol.footnotes li:target { background:#fff8c5; }
.kind { display:inline-block; min-width:78px; font-size:10.5px; text-transform:uppercase; letter-spacing:0.05em;
  color:var(--muted); }
footer { color:var(--muted); font-size:12px; padding:18px 0 40px; }
#tooltip { position:fixed; z-index:10; display:none; pointer-events:none; max-width:560px; white-space:pre-wrap;
  background:#1f2328; color:#fff; font-size:12px; line-height:1.45; padding:7px 10px; border-radius:6px;
  box-shadow:0 4px 14px rgba(0,0,0,.18); font-family: ui-monospace, SFMono-Regular, Menlo, "DejaVu Sans Mono",
  monospace; }
"""
