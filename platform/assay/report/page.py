"""The HTML page around the sections: header, contents, stylesheet and a small tooltip script.

Everything is inline (CSS, SVG, script), so ``index.html`` can be mailed, archived or opened from
disk with no network. The script only replaces the browser's slow native tooltips (SVG
``<title>`` and ``title`` attributes) by an immediate, multi-line one; without it the native
tooltips show the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from assay.report.sections import Section
from assay.report.stylesheet import CSS
from assay.report.svg import esc

SCRIPT = """
(function () {
  var tip = document.createElement('div');
  tip.id = 'tooltip';
  tip.setAttribute('role', 'tooltip');
  document.body.appendChild(tip);
  var sources = document.querySelectorAll('svg.chart title, [title]');
  for (var i = 0; i < sources.length; i++) {
    var el = sources[i];
    var isTitle = el.tagName.toLowerCase() === 'title';
    var host = isTitle ? el.parentNode : el;
    host.setAttribute('data-tip', isTitle ? el.textContent : el.getAttribute('title'));
    if (isTitle) { el.parentNode.removeChild(el); } else { el.removeAttribute('title'); }
  }
  function place(e) {
    var x = e.clientX + 14, y = e.clientY + 16;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 8) { x = Math.max(8, e.clientX - w - 14); }
    if (y + h > window.innerHeight - 8) { y = Math.max(8, e.clientY - h - 16); }
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  document.addEventListener('mouseover', function (e) {
    var host = e.target.closest ? e.target.closest('[data-tip]') : null;
    if (!host) { tip.style.display = 'none'; return; }
    tip.textContent = host.getAttribute('data-tip');
    tip.style.display = 'block';
    place(e);
  });
  document.addEventListener('mousemove', function (e) { if (tip.style.display === 'block') { place(e); } });
  document.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
})();
"""


def render_page(sections: Sequence[Section], *, generated_at: datetime, code_version: str, code_note: str,
                counts: dict[str, int], pages_link: str | None = None) -> str:
    """The complete, self-contained HTML document; ``pages_link`` (relative) leads to the exported
    served pages (:mod:`assay.serve.export`)."""
    toc = "".join(f'<a href="#{esc(s.id)}">{i}. {esc(s.title)}</a>' for i, s in enumerate(sections, 1))
    stats = "".join(f'<div class="stat"><b>{v:,}</b>{esc(k)}</div>' for k, v in counts.items())
    body = "".join(f'<section id="{esc(s.id)}"><h2><span class="num">{i}.</span>{esc(s.title)}</h2>{s.body}</section>'
                   for i, s in enumerate(sections, 1))
    when = generated_at.strftime("%Y-%m-%d %H:%M UTC")
    pages = (f'<a href="{esc(pages_link)}" id="served-pages">the leaderboard pages (as <code>assay serve</code> shows '
             "them)</a>" if pages_link else "")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Assay report · {esc(when)}</title>
<style>{CSS}</style>
</head>
<body>
<header class="top"><div class="wrap">
<h1>Assay report <small>metrics against human judgments</small></h1>
<p class="meta">Generated {esc(when)} by <code>{esc(code_version)}</code>{code_note}. Every number shows its
signature, dataset version and run on hover and in the numbered notes at the end.</p>
<div class="stats">{stats}</div>
<nav class="toc">{toc}{pages}</nav>
</div></header>
<main class="wrap">{body}</main>
<footer class="wrap">Static page: inline SVG and CSS, no network access needed. Written by
<code>assay report</code>.</footer>
<script>{SCRIPT}</script>
</body>
</html>
"""
