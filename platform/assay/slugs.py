"""Slugs: names and HTML ids derived from free text (folder names, labels, titles).

One rule for every derived name: lowercase the text, replace each run of other characters than
``a-z``, ``0-9`` and the ones a name may keep by ``-``, strip ``-`` and the kept characters from
both ends, fold runs of dots (``..`` is never part of a valid name), cut to the longest allowed
length. The callers validate the result against their own name rules (dataset, checkpoint).
"""

from __future__ import annotations

import re


def slug(text: str, *, keep: str = "", max_length: int | None = None, default: str = "") -> str:
    """``text`` as a slug keeping ``a-z``, ``0-9`` and the characters of ``keep``;
    ``default`` when nothing is left (``slug("BLEURT MiniLM/", keep="._-")`` is ``bleurt-minilm``)."""
    cleaned = re.sub(f"[^a-z0-9{re.escape(keep)}]+", "-", text.lower()).strip("-" + keep)
    return re.sub(r"\.{2,}", ".", cleaned)[:max_length] or default
