"""mt-metrics-eval's data directory (format ``mtme``): one version per language pair.

google-research/mt-metrics-eval (MTME) distributes the WMT metrics tasks as one folder per test set
(``mt-metrics-eval-v2/wmt23/``), which ``data.EvalSet(test_set, lp)`` reads; its README specifies
the layout, and its loader (``data.py``, ``ratings.py``) the rules this format follows::

    wmt23/sources/<lp>.txt                          one source segment per line (or <lp>.jsonl, "source")
          references/<lp>.<ref>.txt                 one file per reference (refA, refB, synthetic_ref, ...)
          documents/<lp>.docs                       "domain docid" per segment (optional here)
          system-outputs/<lp>/<system>.txt          every system's output, line-aligned with the source
          human-scores/<lp>.<kind>.<level>.score    human scores of kind mqm, da-sqm, esa, wmt-z, ...
          human-scores/<lp>.<name>.seg.rating       error spans (per rater, merged, or merged with raters)
          metric-scores/<lp>/<METRIC>-<REF>.<level>.score   the official submissions (REF "src": no reference)

Rules taken from MTME's loader: texts are read line by line with trailing white space removed, and the
line ``[No translation supplied]`` means no text; a reference file's name after the pair is its name;
a system whose name is a reference's is a human system (``human_sys_names``); levels are ``seg``,
``doc`` (documents in file order), ``domain`` (``domain system score``) and ``sys``; a metric file's
name splits at its last ``-`` into base name and reference(s); the standard reference, the primary
human score per level and the outlier systems come from MTME's metadata for the test set
(:mod:`assay.datasets.formats.mtme_meta`).

One dataset version per language pair. **Segment ids** are the segment's 0-based line number in the
source file, as MTME indexes segments (``"0"`` is the first line); ``item_id`` is the same id. The
version holds:

* ``segments``: one row per (human score kind, system, segment) with a score (``None`` skipped and
  counted in a warning): ``aspect`` the kind (``mqm``, ``da-sqm``, ...), ``human_raw`` the score as
  released, ``references`` the standard reference's text, ``is_human`` as MTME marks human systems;
* ``systems``: the system-level human scores, every kind; ``outputs``: every system's every line,
  human systems included, with the standard reference;
* ``documents`` (segment, document, domain), ``domain_scores`` and ``document_scores`` (the human
  scores of those levels; a domain score's ``rating_count`` is the system's scored segments of the domain
  in the same kind's segment scores, or the domain's segments where the kind has none), and
  ``reference_texts`` (every reference's text, by name);
* ``errors`` and ``ratings`` from the ``.seg.rating`` files: one ``ratings`` row per rated (system,
  segment, rater), its ``penalty`` the sum of its errors' ``score`` as released (scheme
  ``<kind>-weights:released``); a line without a rater column is rated by the file's rating name
  (``mqm.merged``, ``mqm.rater3``), as MTME reads it;
* ``metric_scores``: every official submission's score at every level, with its file and line
  (``docs/STORAGE.md``). The version's ``info`` lists each (metric, reference) variant with its
  external signature (:mod:`assay.results.external_scores`); the ingest writes their segment scores
  to the segment-score store.

The ingested path is a test-set folder, or **MTME's data root** (``mt-metrics-eval-v2/``, which
``data.EvalSet(test_set, lp, path=root)`` reads as ``root/<test set>/``): a folder whose sub-folders
are test sets. A sub-folder counts as a test set when it has MTME's layout (``system-outputs/`` and
``sources/<lp>.txt``) and holds scores (``human-scores/`` or ``metric-scores/``, which every test set
of the metrics task has), so a folder of texts alone (an ESA release's ``txt/``) does not make its
parent a root. A root holds one version per (test set, language pair), each exactly the version its
test-set folder gives on its own: the names in its tables (``metric_scores.file``) and its official
signatures are relative to the test-set folder, only the files it records for re-ingesting are
relative to the root.

Options: ``test_set`` (a root's test sets to read, comma-separated: ``-o test_set=wmt22,wmt23``),
``language_pair`` (the pairs to read, comma-separated; in a root, the test sets that have them),
``reference`` (or ``reference_system``: the standard reference), ``primary_human`` (the primary human
score at every level that has it), and ``missing_metric_scores=zero`` (MTME's repair,
``strict=False``: a system a metric file lacks gets score 0 at line 0; by default such a file is
refused).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from assay.datasets.formats import mtme_meta
from assay.datasets.formats.input_files import InputFiles, count, listing, split_lines, table_from_columns
from assay.datasets.formats.mtme_files import LEVELS, RatingFile, Scores, read_ratings, read_scores
from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError
from assay.results.external_scores import REFERENCE_FREE, external_metric, files_digest

NAME = "mtme"
NO_TRANSLATION = "[No translation supplied]"
ALL_REFERENCES = "all"
TEXT_SUFFIXES = (".txt", ".jsonl")
#: the JSON field of each text kind in MTME's ``.jsonl`` files
JSONL_FIELDS = {"sources": "source", "references": "target", "system-outputs": "hypothesis"}
#: option values of ``missing_metric_scores``
REPAIRS = ("error", "zero")
OPTIONS = ("language_pair", "test_set", "reference", "reference_system", "primary_human", "missing_metric_scores")
#: the folders of a test set that hold scores: a data root's sub-folder is a test set only with one
SCORE_FOLDERS = ("human-scores", "metric-scores")
_TEST_SET_YEAR = re.compile(r"^wmt(\d{2})(?:\b|[._-]|$)")
#: characters a metric name cannot hold: it is a signature field and a folder name
_BAD_METRIC_NAME = re.compile(r"[|/\s]")


def language_pairs(path: Path) -> list[str]:
    """The language pairs of a test-set folder: the names of its ``sources/<lp>.txt`` files."""
    folder = path / "sources"
    if not folder.is_dir():
        return []
    return sorted({p.name[: -len(p.suffix)] for p in folder.iterdir() if p.is_file() and p.suffix in TEXT_SUFFIXES})


def is_test_set(path: Path) -> bool:
    """A test-set folder in MTME's layout: ``system-outputs/`` and ``sources/<lp>.txt``."""
    return path.is_dir() and (path / "system-outputs").is_dir() and bool(language_pairs(path))


def test_sets(path: Path) -> list[str]:
    """The test sets of MTME's data root ``path`` (``mt-metrics-eval-v2/``): the names of its
    sub-folders that are test sets holding scores (:data:`SCORE_FOLDERS`); none when ``path`` is a
    test set itself or not a folder."""
    if not path.is_dir() or is_test_set(path):
        return []
    return sorted(child.name for child in path.iterdir()
                  if not child.name.startswith(".") and is_test_set(child)
                  and any((child / folder).is_dir() for folder in SCORE_FOLDERS))


class MtmeFormat:
    name = NAME
    description = ("mt-metrics-eval's data directory (a test-set folder such as wmt23/: sources, references, "
                   "system-outputs, human-scores, metric-scores; or the root of several, mt-metrics-eval-v2/): "
                   "one version per test set and language pair, with the official submissions' scores")

    def detect(self, path: Path) -> bool:
        return is_test_set(path) or bool(test_sets(path))

    def splits(self, path: Path, options: Mapping[str, str]) -> list[dict[str, str]]:
        """One option set per version ``path`` holds: ``{"language_pair": lp}`` for each pair of a
        test-set folder, ``{"test_set": name, "language_pair": lp}`` for each of a data root (those
        the options name)."""
        if is_test_set(path):
            return [{"language_pair": lp} for lp in _pairs(path, options)]
        return [{"test_set": name, "language_pair": lp} for name, lps in _root_pairs(path, options).items()
                for lp in lps]

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        folder = path
        if not is_test_set(path):
            chosen = _root_pairs(path, options)
            if len(chosen) != 1:
                raise InputError(path, f"the folder holds {count(len(chosen), 'test set')} ({listing(chosen)})",
                                 expected="-o test_set=NAME to parse one (assay ingest stores one version per "
                                 "test set and language pair)")
            folder = path / next(iter(chosen))
        pairs = _pairs(folder, options)
        if len(pairs) != 1:
            raise InputError(folder, f"the folder holds {count(len(pairs), 'language pair')} ({listing(pairs)})",
                             expected="-o language_pair=LP to parse one (assay ingest stores one version per pair)")
        return _Pair(folder, pairs[0], options, ingested=path).parse()


FORMAT = MtmeFormat()


def _listed(options: Mapping[str, str], key: str) -> list[str]:
    """The comma-separated values of option ``key``, in the order given, each once."""
    return list(dict.fromkeys(value.strip() for value in options.get(key, "").split(",") if value.strip()))


def _pairs(path: Path, options: Mapping[str, str]) -> list[str]:
    """The language pairs of test-set folder ``path`` that the options name (every one by default)."""
    found = language_pairs(path)
    if not found:
        raise InputError(path / "sources", "no source file", expected="sources/<lp>.txt for each language pair")
    named = _listed(options, "test_set")
    if named and path.name not in named:
        raise InputError(path, f"the folder is test set {path.name!r}, not {listing(named)}",
                         expected=f"-o test_set={path.name}, or the data root that holds the others")
    wanted = _listed(options, "language_pair")
    if not wanted:
        return found
    absent = [lp for lp in wanted if lp not in found]
    if absent:
        raise InputError(path / "sources", f"no language pair {listing(absent)}", expected="one of: "
                         + listing(found, 30))
    return wanted


def _root_pairs(path: Path, options: Mapping[str, str]) -> dict[str, list[str]]:
    """The test sets of data root ``path`` that the options name (every one by default), each with
    the language pairs the options name that it has (all by default); test sets without any are left
    out, and a named test set or pair that none has is an error."""
    found = test_sets(path)
    if not found:
        raise InputError(path, "neither an mt-metrics-eval test-set folder nor a folder of them",
                         expected="sources/<lp>.txt and system-outputs/<lp>/ (a test set such as wmt23/), or "
                         f"sub-folders laid out so with {' or '.join(SCORE_FOLDERS)} (mt-metrics-eval-v2/)")
    named = _listed(options, "test_set")
    absent = [name for name in named if name not in found]
    if absent:
        raise InputError(path, f"no test set {listing(absent)}", expected="-o test_set= one or more of: "
                         + listing(found, 30))
    wanted = _listed(options, "language_pair")
    chosen: dict[str, list[str]] = {}
    for name in named or found:
        pairs = language_pairs(path / name)
        kept = [lp for lp in wanted if lp in pairs] if wanted else pairs
        if kept:
            chosen[name] = kept
    missing = [lp for lp in wanted if not any(lp in pairs for pairs in chosen.values())]
    if missing:
        where = "none of the test sets named" if named else "no test set here"
        raise InputError(path, f"{where} has language pair {listing(missing)}",
                         expected="pairs of: " + "; ".join(f"{name} {listing(language_pairs(path / name), 30)}"
                                                           for name in named or found))
    return chosen


def test_set_year(test_set: str) -> int | None:
    """The year of an MTME test set named ``wmtYY...`` (``wmt23``, ``wmt21.news``); None otherwise."""
    match = _TEST_SET_YEAR.match(test_set)
    return 2000 + int(match.group(1)) if match else None


@dataclass
class _Choices:
    """The standard reference and the primary human score per level, and where each came from."""

    reference: str
    reference_source: str
    primary_human: dict[str, str]
    primary_human_source: str
    facts: mtme_meta.TestSetFacts | None


@dataclass
class _TestSetFiles(InputFiles):
    """:class:`InputFiles` of a test-set folder inside the ingested path (a data root): the files read
    are recorded relative to the ingested path (what a no-op re-ingest compares), and named relative
    to the test-set folder in tables, signatures and messages, as when the folder is ingested itself."""

    folder: Path = Path()

    def rel(self, path: Path) -> str:
        return path.name if path == self.folder else str(path.relative_to(self.folder))


@dataclass
class _Pair:
    root: Path
    lp: str
    options: Mapping[str, str]
    ingested: Path | None = None
    """The ingested path when it is a data root holding the test set ``root``."""
    files: InputFiles = field(init=False)
    warnings: list[str] = field(default_factory=list)
    source: list[str | None] = field(default_factory=list)
    references: dict[str, list[str | None]] = field(default_factory=dict)
    outputs: dict[str, list[str | None]] = field(default_factory=dict)
    docs: list[tuple[str, str]] | None = None
    human: dict[str, dict[str, Scores]] = field(default_factory=dict)  # kind -> level -> scores
    ratings: dict[str, RatingFile] = field(default_factory=dict)  # rating name -> file
    metrics: list[tuple[str, str, str, Scores, str]] = field(default_factory=list)  # metric, ref, level, scores, file
    missing_text: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.files = _TestSetFiles(self.ingested or self.root, folder=self.root)

    # -- reading ---------------------------------------------------------------------------------

    def parse(self) -> ParsedDataset:
        unknown = sorted(set(self.options) - set(OPTIONS) - {"mqm_weights"})
        if unknown or "mqm_weights" in self.options:
            self.warnings.append(f"option(s) {', '.join(unknown or ['mqm_weights'])} do not apply to format mtme "
                                 f"and were ignored (it takes {', '.join(OPTIONS)}).")
        repair = self.options.get("missing_metric_scores", "error")
        if repair not in REPAIRS:
            raise InputError(self.root, f"missing_metric_scores={repair!r}", expected=" or ".join(REPAIRS))
        source_file = self._text_file(self.root / "sources", self.lp)
        self.source = self._texts(source_file, "sources")
        if not self.source:
            raise InputError(source_file, "the file is empty", expected="one source segment per line")
        self._read_documents()
        self._read_references()
        self._read_outputs()
        self._read_human_scores()
        choices = self._choose()
        self._read_ratings()
        repaired = self._read_metric_scores(repair == "zero")
        self._quirk_warnings(choices, repaired)
        return self.files.parsed(NAME, self._tables(choices), self.warnings, self._metadata(choices, repaired))

    def _text_file(self, folder: Path, stem: str) -> Path:
        for suffix in TEXT_SUFFIXES:
            candidate = folder / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
        raise InputError(folder / f"{stem}.txt", "no such file",
                         expected=f"{stem}.txt or {stem}.jsonl in {folder.name}/")

    def _texts(self, path: Path, kind: str) -> list[str | None]:
        """A text file's lines as MTME reads them: trailing white space removed, the no-translation
        marker as None; ``.jsonl``: one JSON object per line with the text in its kind's field."""
        lines = split_lines(self.files.read_text(path))
        if path.suffix == ".jsonl":
            texts: list[str | None] = []
            key = JSONL_FIELDS[kind]
            for number, line in enumerate(lines, start=1):
                try:
                    value = json.loads(line)[key]
                except (ValueError, KeyError, TypeError):
                    raise InputError(path, f"not a JSON object with a {key!r} field", line=number,
                                     expected=f'one JSON object per line: {{"{key}": "..."}}') from None
                texts.append(None if value is None or value == NO_TRANSLATION else str(value).rstrip())
        else:
            texts = [None if (text := line.rstrip()) == NO_TRANSLATION else text for line in lines]
        if self.source and len(texts) != len(self.source):
            raise InputError(path, f"{count(len(texts), 'line')}", line=len(texts) or None,
                             expected=f"{count(len(self.source), 'line')}, one per source segment")
        missing = sum(text is None for text in texts)
        if missing:
            self.missing_text[self.files.rel(path)] += missing
        return texts

    def _read_documents(self) -> None:
        path = self.root / "documents" / f"{self.lp}.docs"
        if not path.is_file():
            return
        lines = split_lines(self.files.read_text(path))
        if len(lines) != len(self.source):
            raise InputError(path, count(len(lines), "line"), line=len(lines) or None,
                             expected=f"{count(len(self.source), 'line')}, one per source segment")
        docs: list[tuple[str, str]] = []
        seen: dict[str, int] = {}
        for number, line in enumerate(lines, start=1):
            cells = line.split()
            if len(cells) != 2:
                raise InputError(path, f"{len(cells)} whitespace-separated fields", line=number,
                                 expected="2 fields: domain and document id")
            domain, doc = cells
            if doc in seen and docs[-1][1] != doc:
                raise InputError(path, f"document {doc} continues after another document", line=number,
                                 expected=f"each document's segments on consecutive lines (it began on line "
                                 f"{seen[doc]})")
            seen.setdefault(doc, number)
            docs.append((domain, doc))
        self.docs = docs

    def _read_references(self) -> None:
        folder = self.root / "references"
        for path in sorted(folder.glob(f"{self.lp}.*.*")) if folder.is_dir() else []:
            name = path.name[len(self.lp) + 1: -len(path.suffix)]
            if path.suffix not in TEXT_SUFFIXES or not name:
                raise InputError(path, "not a reference file", expected=f"{self.lp}.<name>.txt or .jsonl")
            if "-" in name or "." in name or name in (ALL_REFERENCES, REFERENCE_FREE):
                raise InputError(path, f"invalid reference name {name!r}",
                                 expected="a name without '-' or '.', other than 'all' and 'src' "
                                 "(mt-metrics-eval's rule)")
            if name in self.references:
                raise InputError(path, f"a second reference named {name!r}", expected="one file per reference")
            self.references[name] = self._texts(path, "references")
        if not self.references:
            raise InputError(folder, f"no reference for {self.lp}", expected=f"references/{self.lp}.<name>.txt")

    def _read_outputs(self) -> None:
        folder = self.root / "system-outputs" / self.lp
        if not folder.is_dir():
            raise InputError(folder, "no such folder", expected=f"system-outputs/{self.lp}/<system>.txt")
        for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
            if path.suffix not in TEXT_SUFFIXES:
                raise InputError(path, "not a system output", expected="<system>.txt or <system>.jsonl")
            self.outputs[path.name[: -len(path.suffix)]] = self._texts(path, "system-outputs")
        if not self.outputs:
            raise InputError(folder, "no system output", expected=f"system-outputs/{self.lp}/<system>.txt")

    def _units(self, level: str) -> list[str]:
        if level == "seg":
            return [str(i) for i in range(len(self.source))]
        if level == "sys":
            return [""]
        if self.docs is None:
            raise InputError(self.root / "documents" / f"{self.lp}.docs", f"{level}-level scores need the documents",
                             expected="documents/<lp>.docs: domain and document id per segment")
        # MTME orders domains by name (a canonical order) and documents as they occur
        names = [domain if level == "domain" else doc for domain, doc in self.docs]
        return sorted(set(names)) if level == "domain" else list(dict.fromkeys(names))

    def _read_human_scores(self) -> None:
        folder = self.root / "human-scores"
        for path in sorted(folder.glob(f"{self.lp}.*.score")) if folder.is_dir() else []:
            parts = path.name.split(".")
            if len(parts) < 4 or parts[-2] not in LEVELS:
                raise InputError(path, "a human score file name that names no level",
                                 expected=f"{self.lp}.<kind>.<level>.score with level one of {', '.join(LEVELS)}")
            kind, level = ".".join(parts[1:-2]), parts[-2]
            scores = read_scores(path, self.files.read_text(path), level, self._units(level), self.outputs,
                                 human=True, what=f"human score {kind}")
            self.human.setdefault(kind, {})[level] = scores

    def _read_ratings(self) -> None:
        folder = self.root / "human-scores"
        for path in sorted(folder.glob(f"{self.lp}.*.rating")) if folder.is_dir() else []:
            parts = path.name.split(".")
            if len(parts) < 4 or parts[-2] != "seg":
                raise InputError(path, "a rating file name that is not <lp>.<name>.seg.rating",
                                 expected=f"{self.lp}.<name>.seg.rating (ratings are segment-level)")
            name = ".".join(parts[1:-2])
            self.ratings[name] = read_ratings(path, self.files.read_text(path), len(self.source), self.outputs, name,
                                              self._text_of)

    def _text_of(self, system: str, segment: int, source_side: bool) -> str | None:
        return self.source[segment] if source_side else self.outputs[system][segment]

    def _read_metric_scores(self, repair: bool) -> dict[str, list[str]]:
        """Every ``metric-scores/<lp>/*.score`` file; returns the systems each repaired file lacked."""
        folder = self.root / "metric-scores" / self.lp
        repaired: dict[str, list[str]] = {}
        for path in sorted(folder.glob("*.score")) if folder.is_dir() else []:
            name, level, _ = path.name.rsplit(".", 2)
            if level not in LEVELS or "-" not in name:
                raise InputError(path, "a metric score file name that is not NAME-REF.LEVEL.score",
                                 expected=f"NAME-REF.LEVEL.score with LEVEL one of {', '.join(LEVELS)}")
            metric, reference = name.rsplit("-", 1)
            if _BAD_METRIC_NAME.search(metric) or not metric:
                raise InputError(path, f"the metric name {metric!r} holds white space, '|' or '/'",
                                 expected="a metric name without them (it names the metric in signatures and folders)")
            used = self._references_used(path, reference)
            scores = read_scores(path, self.files.read_text(path), level, self._units(level), self.outputs,
                                 human=False, what=f"metric {name}")
            required = sorted(set(self.outputs) - used - set(scores.values))
            if required:
                if not repair:
                    raise InputError(path, f"metric {name} has no {level}-level scores for system(s) "
                                     f"{listing(required)}", expected="a score for every system with an output, "
                                     "except the references the metric uses (or -o missing_metric_scores=zero, "
                                     "mt-metrics-eval's repair with 0s)")
                for system in required:
                    scores.values[system] = [0.0] * len(scores.units)
                    scores.lines[system] = [0] * len(scores.units)
                repaired[self.files.rel(path)] = required
            self.metrics.append((metric, reference, level, scores, self.files.rel(path)))
        return repaired

    def _references_used(self, path: Path, reference: str) -> set[str]:
        if reference == REFERENCE_FREE:
            return set()
        if reference == ALL_REFERENCES:
            return set(self.references)
        used = set(reference.split("."))
        unknown = sorted(used - set(self.references))
        if unknown:
            raise InputError(path, f"the metric uses reference(s) {', '.join(unknown)}, which references/ does not "
                             "have", expected=f"src, all, or '.'-joined names of: {', '.join(sorted(self.references))}")
        return used

    # -- choices ---------------------------------------------------------------------------------

    def _choose(self) -> _Choices:
        test_set = self.root.name
        facts = mtme_meta.facts_for(test_set, self.lp)
        given = self.options.get("reference") or self.options.get("reference_system")
        where = self.root / "references"
        if given:
            reference, reference_source = given, "option"
        elif facts is not None:
            reference, reference_source = facts.std_ref, facts.source
        else:
            reference = sorted(self.references)[0]
            reference_source = ("fallback: the first reference in alphabetical order (the pair is not in "
                                "mt-metrics-eval's metadata)")
        if reference not in self.references:
            raise InputError(where, f"the standard reference {reference!r} ({reference_source}) is not among the "
                             f"references ({', '.join(sorted(self.references))})",
                             expected="-o reference=NAME naming one of them")
        levels = {level for by_level in self.human.values() for level in by_level}
        given_human = self.options.get("primary_human")
        if given_human:
            if given_human not in self.human:
                raise InputError(self.root / "human-scores", f"no human score {given_human!r}",
                                 expected="-o primary_human= one of: " + (", ".join(sorted(self.human)) or "(none)"))
            primary = {level: given_human for level in self.human[given_human]}
            primary_source = "option"
        elif facts is not None:
            primary, primary_source = dict(facts.std_gold), facts.source
            for level, kind in primary.items():
                if level not in self.human.get(kind, {}):
                    raise InputError(self.root / "human-scores", f"mt-metrics-eval's metadata names {kind} the "
                                     f"primary {level}-level human score of {test_set} {self.lp}, but there is no "
                                     f"{self.lp}.{kind}.{level}.score", expected="-o primary_human=KIND naming one "
                                     "that is there: " + (", ".join(sorted(self.human)) or "(none)"))
        else:
            primary = {}
            for level in sorted(levels):
                kinds = sorted(kind for kind, by_level in self.human.items() if level in by_level)
                primary[level] = "mqm" if "mqm" in kinds else kinds[0]
            primary_source = ("fallback: mqm where there is one, else the first kind in alphabetical order (the pair "
                              "is not in mt-metrics-eval's metadata)")
        return _Choices(reference, reference_source, primary, primary_source, facts)

    # -- the tables ------------------------------------------------------------------------------

    def _tables(self, choices: _Choices) -> dict[str, pa.Table]:
        lp, ids, humans = self.lp, [str(i) for i in range(len(self.source))], set(self.references)
        standard = self.references[choices.reference]
        source = self.source
        reference_lists = [[text or ""] for text in standard]
        tables: dict[str, pa.Table] = {}

        systems = sorted(self.outputs)
        n = len(source)
        tables["outputs"] = table_from_columns("outputs", {
            "group": [lp] * (n * len(systems)),
            "segment_id": ids * len(systems),
            "system": [s for s in systems for _ in range(n)],
            "source": source * len(systems),
            "references": reference_lists * len(systems),
            "candidate": [text or "" for s in systems for text in self.outputs[s]],
        })

        seg: dict[str, list[Any]] = {c: [] for c in ("aspect", "segment_id", "system", "is_human", "source",
                                                     "references", "candidate", "human_raw")}
        sys_rows: dict[str, list[Any]] = {c: [] for c in ("aspect", "system", "is_human", "human_raw", "rating_count",
                                                          "output_system")}
        units: dict[str, dict[str, list[Any]]] = {
            level: {c: [] for c in ("aspect", level_column, "system", "is_human", "human_raw", *extra)}
            for level, level_column, extra in (("domain", "domain", ("rating_count",)), ("doc", "document", ()))}
        for kind in sorted(self.human):
            by_level = self.human[kind]
            rated: dict[str, int] = {}
            if "seg" in by_level:
                for system in sorted(by_level["seg"].values):
                    outputs = self.outputs[system]
                    for i, value in enumerate(by_level["seg"].values[system]):
                        if value is None:
                            continue
                        seg["aspect"].append(kind)
                        seg["segment_id"].append(ids[i])
                        seg["system"].append(system)
                        seg["is_human"].append(system in humans)
                        seg["source"].append(source[i])
                        seg["references"].append(reference_lists[i])
                        seg["candidate"].append(outputs[i] or "")
                        seg["human_raw"].append(value)
                        rated[system] = rated.get(system, 0) + 1
            if "sys" in by_level:
                for system, (value,) in sorted(by_level["sys"].values.items()):
                    if value is None:
                        continue
                    sys_rows["aspect"].append(kind)
                    sys_rows["system"].append(system)
                    sys_rows["is_human"].append(system in humans)
                    sys_rows["human_raw"].append(value)
                    sys_rows["rating_count"].append(rated.get(system) if "seg" in by_level else None)
                    sys_rows["output_system"].append(system)
            for level, columns in units.items():
                if level not in by_level:
                    continue
                scores = by_level[level]
                segments_of = self._segments_per_domain(by_level.get("seg")) if level == "domain" else {}
                for system in sorted(scores.values):
                    for unit, value in zip(scores.units, scores.values[system], strict=True):
                        if value is not None:
                            columns["aspect"].append(kind)
                            columns["domain" if level == "domain" else "document"].append(unit)
                            columns["system"].append(system)
                            columns["is_human"].append(system in humans)
                            columns["human_raw"].append(value)
                            if level == "domain":
                                columns["rating_count"].append(segments_of.get((system, unit), 0)
                                                               if by_level.get("seg") else segments_of[("", unit)])
        rows = len(seg["aspect"])
        tables["segments"] = table_from_columns("segments", {
            **seg, "group": [lp] * rows, "item_id": list(seg["segment_id"])})
        tables["systems"] = table_from_columns("systems", {**sys_rows, "group": [lp] * len(sys_rows["aspect"])})
        for level, name in (("domain", "domain_scores"), ("doc", "document_scores")):
            if any(level in by_level for by_level in self.human.values()):
                tables[name] = table_from_columns(name, {**units[level], "group": [lp] * len(units[level]["aspect"])})
        tables["reference_texts"] = table_from_columns("reference_texts", {
            "group": [lp] * (n * len(self.references)),
            "reference": [name for name in sorted(self.references) for _ in range(n)],
            "segment_id": ids * len(self.references),
            "text": [text for name in sorted(self.references) for text in self.references[name]],
        })
        if self.docs is not None:
            tables["documents"] = table_from_columns("documents", {
                "group": [lp] * n, "segment_id": ids, "document": [doc for _, doc in self.docs],
                "domain": [domain for domain, _ in self.docs]})
        if self.ratings:
            tables.update(self._rating_tables())
        if self.metrics:
            tables["metric_scores"] = self._metric_table()
        return tables

    def _segments_per_domain(self, seg: Scores | None) -> dict[tuple[str, str], int]:
        """(system, domain) -> the system's scored segments in the domain (``seg`` scores of the same
        kind); without them, ("", domain) -> the domain's segments, which its score covers."""
        domains = [domain for domain, _ in self.docs or []]
        counted: Counter[tuple[str, str]] = Counter()
        if seg is None:
            counted.update(("", domain) for domain in domains)
        else:
            for system, values in seg.values.items():
                counted.update((system, domain) for domain, value in zip(domains, values, strict=True)
                               if value is not None)
        return dict(counted)

    def _rating_tables(self) -> dict[str, pa.Table]:
        """``errors`` and ``ratings`` from every rating file, in file-name order; a (system, segment,
        rater) rated in two files is stored once (the first file's), and counted in a warning."""
        errors: dict[str, list[Any]] = {c: [] for c in ("item_id", "segment_id", "system", "rater", "side", "start",
                                                        "end", "category", "severity", "line")}
        ratings: dict[str, list[Any]] = {c: [] for c in ("item_id", "segment_id", "system", "rater", "scheme",
                                                         "penalty", "errors")}
        seen: dict[tuple[str, int, str], tuple[Any, ...]] = {}
        repeated, differing = 0, 0
        for name in sorted(self.ratings):
            scheme = f"{self._rating_kind(name)}-weights:released"
            for rating in self.ratings[name].ratings:
                key = (rating.system, rating.segment, rating.rater)
                if key in seen:
                    repeated += 1
                    differing += seen[key] != rating.errors
                    continue
                seen[key] = rating.errors
                segment = str(rating.segment)
                for error in rating.errors:
                    errors["item_id"].append(segment)
                    errors["segment_id"].append(segment)
                    errors["system"].append(rating.system)
                    errors["rater"].append(rating.rater)
                    errors["side"].append("source" if error.is_source_error else "target")
                    errors["start"].append(error.start)
                    errors["end"].append(error.end)
                    errors["category"].append(error.category or "")
                    errors["severity"].append(error.severity or "")
                    errors["line"].append(rating.line)
                ratings["item_id"].append(segment)
                ratings["segment_id"].append(segment)
                ratings["system"].append(rating.system)
                ratings["rater"].append(rating.rater)
                ratings["scheme"].append(scheme)
                ratings["penalty"].append(sum(e.score for e in rating.errors if e.score is not None))
                ratings["errors"].append(len(rating.errors))
        if repeated:
            self.warnings.append(
                f"{count(repeated, 'rating')} of a (system, segment, rater) appear in more than one rating file "
                f"({differing:,} of them differ); each is stored once, from the first file in name order.")
        lp = [self.lp]
        return {"errors": table_from_columns("errors", {**errors, "group": lp * len(errors["line"])}),
                "ratings": table_from_columns("ratings", {**ratings, "group": lp * len(ratings["rater"])})}

    def _rating_kind(self, rating_name: str) -> str:
        """The human score kind a rating set belongs to: the component of its name that names a kind
        of human score (``round2.mqm.merged`` -> ``mqm``), else its first component."""
        parts = rating_name.split(".")
        return next((p for p in parts if p in self.human), parts[0])

    def _metric_table(self) -> pa.Table:
        chunks = []
        for metric, reference, level, scores, file in self.metrics:
            systems = sorted(scores.values)
            width = len(scores.units)
            size = width * len(systems)
            unit_column = list(scores.units) * len(systems)
            chunks.append(table_from_columns("metric_scores", {
                "group": [self.lp] * size,
                "metric": [metric] * size,
                "reference": [reference] * size,
                "level": [level] * size,
                "domain": unit_column if level == "domain" else [None] * size,
                "system": [s for s in systems for _ in range(width)],
                "segment_id": unit_column if level == "seg" else [None] * size,
                "score": [v for s in systems for v in scores.values[s]],
                "file": [file] * size,
                "line": [line for s in systems for line in scores.lines[s]],
                "document": unit_column if level == "doc" else [None] * size,
            }))
        return pa.concat_tables(chunks)

    # -- what is recorded ------------------------------------------------------------------------

    def _external_metrics(self) -> list[dict[str, Any]]:
        """Each (metric, reference) variant, its levels, files and external signature."""
        sha = {self.files.rel(self.files.root / f.path): f.sha256 for f in self.files.source_files}
        variants: dict[tuple[str, str], dict[str, Any]] = {}
        for metric, reference, level, _, file in self.metrics:
            entry = variants.setdefault((metric, reference), {"metric": metric, "reference": reference, "levels": [],
                                                              "files": []})
            entry["levels"].append(level)
            entry["files"].append(file)
        for entry in variants.values():
            digest = files_digest((file, sha[file]) for file in entry["files"])
            entry["levels"] = [level for level in LEVELS if level in entry["levels"]]
            entry["signature"] = external_metric(entry["metric"], entry["reference"], self.root.name, digest).signature
        return [variants[key] for key in sorted(variants)]

    def _metadata(self, choices: _Choices, repaired: dict[str, list[str]]) -> dict[str, Any]:
        facts, test_set = choices.facts, self.root.name
        year = test_set_year(test_set)
        rating_sets = {
            name: {"kind": self._rating_kind(name), "raters": sorted({r.rater for r in file.ratings}),
                   "form": "rater column" if file.has_rater_column else "one rater per file (named by the file)",
                   "rated": len(file.ratings), "unrated": file.unrated}
            for name, file in sorted(self.ratings.items())}
        return {
            "test_set": test_set,
            **({"year": year} if year else {}),
            "language_pair": self.lp,
            "language_pairs": [self.lp],
            "default_name": f"mtme-{test_set}-{self.lp}",
            "segment_ids": "0-based line numbers of sources/<lp>.txt, as mt-metrics-eval indexes segments",
            "segments": len(self.source),
            "reference_system": choices.reference,
            "reference_source": choices.reference_source,
            "references": sorted(self.references),
            "primary_human": choices.primary_human,
            "primary_human_source": choices.primary_human_source,
            "human_scores": {kind: [level for level in LEVELS if level in by_level]
                             for kind, by_level in sorted(self.human.items())},
            "human_systems": sorted(set(self.outputs) & set(self.references)),
            "outlier_systems": sorted(facts.outlier_systems) if facts else [],
            "primary_metrics": sorted(facts.primary_metrics) if facts else [],
            "baseline_metrics": sorted(facts.baseline_metrics) if facts and facts.baseline_metrics else [],
            "metadata_source": facts.source if facts else "none: the pair is not in mt-metrics-eval's metadata",
            "exclude_human_by_default": True,
            "candidates": "human systems (outputs named like a reference) are left out of evaluation unless included",
            "systems": len(self.outputs),
            "domains": sorted({domain for domain, _ in self.docs}) if self.docs else [],
            "rating_sets": rating_sets,
            "external_metrics": self._external_metrics(),
            **({"repaired_metric_scores": repaired} if repaired else {}),
        }

    def _quirk_warnings(self, choices: _Choices, repaired: dict[str, list[str]]) -> None:
        for by_level in (self.human[kind] for kind in sorted(self.human)):
            for level, scores in sorted(by_level.items()):
                none = scores.none_count
                if none:
                    self.warnings.append(
                        f"{count(none, 'score')} of {self.files.rel(scores.path)} are None (not rated); they have no "
                        f"{_TABLE_OF_LEVEL[level]} rows.")
        for name, file in sorted(self.ratings.items()):
            if file.unscored_errors:
                self.warnings.append(f"{count(file.unscored_errors, 'error')} of rating set {name} give no score; "
                                     "they weigh 0 in its ratings' penalty.")
        if self.missing_text:
            self.warnings.append(
                f"{count(sum(self.missing_text.values()), 'line')} say {NO_TRANSLATION!r} (no text) in "
                f"{listing(sorted(self.missing_text))}; they are stored as empty texts.")
        for repaired_file, systems in sorted(repaired.items()):
            self.warnings.append(f"{repaired_file} has no scores for {listing(systems)}: given 0, as "
                                 "mt-metrics-eval's repair does (missing_metric_scores=zero).")
        if choices.facts is None:
            self.warnings.append(f"{self.root.name} {self.lp} is not in mt-metrics-eval's metadata: the standard "
                                 f"reference {choices.reference} and the primary human scores "
                                 f"{json.dumps(choices.primary_human, sort_keys=True)} follow the fallback rule "
                                 "(-o reference=, -o primary_human= override them).")
        elif not choices.primary_human and "primary_human" not in self.options:
            self.warnings.append(f"mt-metrics-eval's metadata names no primary human score for {self.root.name} "
                                 f"{self.lp} (-o primary_human=KIND names one).")


_TABLE_OF_LEVEL = {"seg": "segments", "sys": "systems", "domain": "domain_scores", "doc": "document_scores"}

