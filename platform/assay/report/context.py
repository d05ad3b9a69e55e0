"""What every section needs while it renders: settings, colours, and the citations of numbers.

:class:`ReportContext` turns a stored correlation row into its hover text (value, interval, rank,
signature, dataset version and digest, run) and into footnote numbers, so each section cites
numbers the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay import slugs
from assay.config import Settings
from assay.report.collect import CorrelationRow, VersionInfo
from assay.report.footnotes import Footnotes
from assay.report.palette import MetricPalette
from assay.report.svg import esc
from assay.results.correlations import counted

STATISTIC_NAMES = {
    "pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ-b", "kendall_c": "Kendall τ-c",
    "kendall_like": "WMT DARR Kendall-like τ", "pairwise_accuracy": "pairwise accuracy",
    "tau23": "τ_23", "acc23": "acc_23", "acc_t": "acc-t (tie-calibrated acc_23)",
    "spa": "soft pairwise accuracy (SPA)", "acc_t_item": "acc-t grouped by item (tie-calibrated)",
    "wmt24": "WMT24 average (SPA and item-grouped acc-t)",
}
LEVEL_NAMES = {"seg": "segment level", "sys": "system level", "avg": "mean of system and segment level (WMT24)"}


def statistic_name(statistic: str) -> str:
    return STATISTIC_NAMES.get(statistic, statistic)


def slug(*parts: object) -> str:
    """An HTML id from free text."""
    return slugs.slug("-".join(str(p) for p in parts))


def signed(value: float | None, decimals: int = 3) -> str:
    return "–" if value is None else f"{value:.{decimals}f}".replace("-", "−")


@dataclass
class ReportContext:
    settings: Settings
    versions: list[VersionInfo]
    palette: MetricPalette
    code_version: str
    notes: Footnotes = field(default_factory=Footnotes)

    def version(self, name: str, number: int) -> VersionInfo | None:
        return next((v for v in self.versions if v.ref.name == name and v.ref.number == number), None)

    # --- citations -------------------------------------------------------------------------------
    def version_note(self, version: VersionInfo) -> int:
        derived = ""
        if version.derivation:
            derived = " · derived: " + esc(", ".join(f"{k}={v}" for k, v in version.derivation.items()
                                                      if k != "parent_digest"))
        counts = ", ".join(f"{v:,} {k}" for k, v in version.row_counts.items() if v)
        text = (f"<b>{esc(version.label)}</b> · format {esc(version.format)} · sha256 <code>{esc(version.ref.digest)}"
                f"</code> · {esc(counts)}{derived}")
        return self.notes.cite("dataset", version.label + "#" + version.ref.digest, text)

    def run_note(self, row: CorrelationRow) -> int:
        when = row.created_at.strftime("%Y-%m-%d %H:%M UTC") if row.created_at else "?"
        text = (f"evaluate run <code>{esc(row.run_id)}</code> · {esc(when)} · code <code>{esc(row.code_version)}"
                f"</code> · protocol {esc(row.protocol)} · {row.n_resamples:,} bootstrap resamples, seed {row.seed}")
        return self.notes.cite("run", row.run_id, text)

    def row_notes(self, row: CorrelationRow) -> list[int]:
        numbers = [self.notes.signature(row.signature)]
        version = self.version(row.dataset, row.version_number)
        if version is not None:
            numbers.append(self.version_note(version))
        numbers.append(self.run_note(row))
        return numbers

    def row_tooltip(self, row: CorrelationRow) -> str:
        """Hover text: the number, its interval, rank and cluster, and where it came from."""
        notes = self.row_notes(row)
        ci = (f", 95% CI [{signed(row.ci_low)}, {signed(row.ci_high)}]"
              if row.ci_low is not None and row.ci_high is not None else "")
        rank = f" · rank {row.rank}, cluster {row.cluster}" if row.rank is not None else ""
        return (f"{self.palette.label(row.signature)} · {statistic_name(row.statistic)} = {signed(row.value)}{ci}\n"
                f"{row.group} ({row.aspect}) · n = {counted(row.n, row.unit)}{rank}\n"
                + (f"calibrated tie threshold epsilon = {row.epsilon:.6g}\n" if row.epsilon is not None else "")
                + (f"degenerate, not ranked: {row.degenerate}\n" if row.degenerate else "") +
                f"signature: {row.signature}\n"
                f"dataset: {row.dataset}@{row.version_number} (sha256 {row.version_digest[:16]}…)\n"
                f"run: {row.run_id} · {row.code_version}\n"
                f"notes {', '.join(str(n) for n in notes)}")
