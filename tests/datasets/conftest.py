"""Fixtures for the format parser tests.

Two kinds: the real datasets parsed once per session (``parsed_wmt17`` ...), and factories that
build a *small copy* of a real dataset in ``tmp_path`` for the bad-input tests, which then
corrupt one thing in it. Factories are fixtures (not importable helpers) because pytest runs
with ``--import-mode=importlib``.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError

# -- the real datasets, parsed once ----------------------------------------------------------


@pytest.fixture(scope="session")
def parsed_wmt17(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / "wmt17-da")


@pytest.fixture(scope="session")
def parsed_wmt18(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / "wmt18-da")


@pytest.fixture(scope="session")
def parsed_wmt16(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / "wmt16-da-seg")


@pytest.fixture(scope="session")
def parsed_webnlg(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / "webnlg2017-human-eval")


@pytest.fixture(scope="session")
def parsed_huse(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / "huse")


# -- checking errors -------------------------------------------------------------------------


@pytest.fixture
def raises_input_error() -> Callable[..., AbstractContextManager[None]]:
    """``with raises_input_error(file, line=3, expected="..."):`` checks what the error names.

    ``file`` is the path (or its final part) the message must name, ``line`` the line it must
    give (None: no line), ``expected`` a fragment of the expected-clause and ``problem`` one of
    the problem text.
    """

    @contextmanager
    def check(file: Path | str, *, line: int | None = None, expected: str | None = None,
              problem: str | None = None) -> Iterator[None]:
        with pytest.raises(InputError) as excinfo:
            yield
        err = excinfo.value
        message = str(err)
        assert str(err.path).endswith(str(file)), message
        assert err.line == line, message
        if line is not None:
            assert f":{line}:" in message
        if expected is not None:
            assert err.expected is not None and expected in err.expected, message
            assert "expected" in message
        if problem is not None:
            assert problem in err.problem, message

    return check


# -- small copies of the real datasets -------------------------------------------------------


def _head(source: Path, target: Path, lines: int) -> None:
    """The first ``lines`` lines of ``source`` (bytes as they are, BOM included)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as handle:
        target.write_bytes(b"".join(handle.readline() for _ in range(lines)))


@pytest.fixture
def wmt_package(tmp_path: Path, shared_data: Path) -> Callable[..., Path]:
    """A WMT17-shaped package with a few language pairs and only the first ``lines`` lines.

    DA-seglevel.csv keeps the rows of those pairs with SID <= ``lines`` (plus, with
    ``foreign=True``, the en-ru rows, whose texts are absent); DA-syslevel.csv keeps the
    systems of those pairs. The text files keep their names and BOMs.
    """
    real = shared_data / "wmt17-da"

    def make(lps: tuple[str, ...] = ("cs-en",), lines: int = 300, foreign: bool = False) -> Path:
        root = tmp_path / "wmt17-small"
        seg = (real / "DA-seglevel.csv").read_text(encoding="utf-8").splitlines()
        keep = [seg[0]] + [
            row for row in seg[1:]
            if (row.split(" ")[0] in lps and int(row.split(" ")[3]) <= lines)
            or (foreign and row.startswith("en-ru "))
        ]
        root.mkdir()
        (root / "DA-seglevel.csv").write_text("\n".join(keep) + "\n", encoding="utf-8")
        sys_rows = (real / "DA-syslevel.csv").read_text(encoding="utf-8").splitlines()
        (root / "DA-syslevel.csv").write_text(
            "\n".join([sys_rows[0]] + [r for r in sys_rows[1:] if r.split(" ")[0] in lps]) + "\n",
            encoding="utf-8",
        )
        for lp in lps:
            xx, yy = lp.split("-")
            _head(real / f"sources/newstest2017-{xx}{yy}-src.{xx}",
                  root / f"sources/newstest2017-{xx}{yy}-src.{xx}", lines)
            _head(real / f"references/newstest2017-{xx}{yy}-ref.{yy}",
                  root / f"references/newstest2017-{xx}{yy}-ref.{yy}", lines)
            for output in sorted((real / "system-outputs/newstest2017" / lp).iterdir()):
                _head(output, root / "system-outputs/newstest2017" / lp / output.name, lines)
            preprocessed = real / "metrics-package-preprocessed/system-outputs" / lp
            if preprocessed.is_dir():
                for output in sorted(preprocessed.iterdir()):
                    _head(output, root / "metrics-package-preprocessed/system-outputs" / lp / output.name, lines)
        return root

    return make


@pytest.fixture
def wmt16_copy(tmp_path: Path, shared_data: Path) -> Callable[..., Path]:
    """The four DAseg files of one language pair, first ``lines`` lines."""

    def make(lp: str = "de-en", lines: int = 30) -> Path:
        root = tmp_path / "wmt16-small"
        for kind in ("human", "mt-system", "reference", "source"):
            name = f"DAseg.newstest2016.{kind}.{lp}"
            _head(shared_data / "wmt16-da-seg" / name, root / name, lines)
        return root

    return make


def read_records(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def write_records(path: Path, records: list[list[str]]) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(records)
    path.write_text(buffer.getvalue(), encoding="utf-8", newline="")


@pytest.fixture
def webnlg_copy(tmp_path: Path, shared_data: Path) -> Callable[..., Path]:
    """The WebNLG folder with the first ``rows`` CSV records; ``edit`` may change the records
    (``records[0]`` is the header) before they are written back as CRLF CSV."""

    def make(rows: int = 30, edit: Callable[[list[list[str]]], None] | None = None) -> Path:
        real = shared_data / "webnlg2017-human-eval"
        root = tmp_path / "webnlg-small"
        root.mkdir()
        shutil.copy(real / "testdata_with_lex.xml", root / "testdata_with_lex.xml")
        records = read_records(real / "all_data_final_averaged.csv")[: rows + 1]
        if edit:
            edit(records)
        write_records(root / "all_data_final_averaged.csv", records)
        return root

    return make


@pytest.fixture
def huse_copy(tmp_path: Path, shared_data: Path) -> Callable[..., Path]:
    """The HUSE folder (raw MTurk results and summary_clean.csv); ``edit_raw``/``edit_clean``
    may change the records of either file before they are written back."""

    def make(
        edit_raw: Callable[[list[list[str]]], None] | None = None,
        edit_clean: Callable[[list[list[str]]], None] | None = None,
        clean: bool = True,
    ) -> Path:
        real = shared_data / "huse"
        root = tmp_path / "huse-small"
        root.mkdir()
        raw = read_records(real / "summarization_raw_outputs.csv")
        if edit_raw:
            edit_raw(raw)
        write_records(root / "summarization_raw_outputs.csv", raw)
        if clean:
            rows = read_records(real / "summary_clean.csv")
            if edit_clean:
                edit_clean(rows)
            write_records(root / "summary_clean.csv", rows)
        return root

    return make
