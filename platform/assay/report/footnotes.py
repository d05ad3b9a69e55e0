"""Numbered notes that trace every number in the report back to how it was produced.

A note is created the first time something is cited (a metric signature, a dataset version with
its digest, an evaluation run, a paper's table) and keeps its number for the whole page, so a
number's hover text and its superscript both lead to the same entry of the list at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.report.svg import esc


@dataclass(frozen=True)
class Note:
    number: int
    kind: str  # signature | dataset | run | reference | code
    key: str
    text: str  # HTML


@dataclass
class Footnotes:
    notes: dict[tuple[str, str], Note] = field(default_factory=dict)

    def cite(self, kind: str, key: str, text_html: str) -> int:
        """The note's number, creating it on first citation."""
        found = self.notes.get((kind, key))
        if found is None:
            found = Note(len(self.notes) + 1, kind, key, text_html)
            self.notes[(kind, key)] = found
        return found.number

    def signature(self, signature: str) -> int:
        return self.cite("signature", signature, f"<code>{esc(signature)}</code>")

    def marker(self, *numbers: int) -> str:
        """Superscript links to notes, e.g. ``<sup>[3, 7]</sup>``."""
        unique = sorted(set(numbers))
        runs: list[list[int]] = []
        for n in unique:
            if runs and n == runs[-1][-1] + 1:
                runs[-1].append(n)
            else:
                runs.append([n])

        def link(n: int) -> str:
            return f'<a href="#fn-{n}">{n}</a>'

        parts = [f"{link(r[0])}–{link(r[-1])}" if len(r) > 2 else ", ".join(link(n) for n in r) for r in runs]
        return f'<sup class="fn">[{", ".join(parts)}]</sup>' if unique else ""

    def html(self) -> str:
        """The numbered list of notes, in citation order."""
        items = [f'<li id="fn-{n.number}" value="{n.number}"><span class="kind kind-{esc(n.kind)}">{esc(n.kind)}'
                 f"</span> {n.text}</li>" for n in sorted(self.notes.values(), key=lambda n: n.number)]
        return '<ol class="footnotes">' + "".join(items) + "</ol>"
