"""``assay sweep`` refusals: each one error (exit 2) before anything runs, and nothing stored, not
even the study's storage: a space file with a mistake, a space naming a checkpoint or dataset that
does not exist, resuming a sweep that does not exist; and ``sweep show`` with nothing to show."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from assay.cli.main import cli
from assay.config import load_settings
from assay.sweeps.storage import SQLITE_FILE

GOOD = """\
[trial]
data = ["wmt16"]
[params.learning_rate]
low = 1e-5
high = 1e-4
"""


def test_refusals_store_nothing(shared_data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(shared_data / "wmt16-da-seg")]).exit_code == 0
    cases = {
        "empty.toml": (GOOD.replace("high = 1e-4", "high = 1e-6"), [],
                       "empty.toml:5: the range of 'learning_rate' is empty: low 1e-05 >= high 1e-06"),
        "typo.toml": (GOOD.replace("learning_rate", "learnin_rate"), [],
                      "typo.toml:3: unknown parameter 'learnin_rate' (expected one of"),
        "type.toml": (GOOD.replace("high = 1e-4", 'high = "big"'), [],
                      "type.toml:5: 'params.learning_rate.high' is 'big' (expected a finite float)"),
        "init.toml": (GOOD.replace('data = ["wmt16"]', 'data = ["wmt16"]\ninit = "nosuch"'), [],
                      "--init 'nosuch' is neither a folder, a registered checkpoint nor a hub id"),
        "data.toml": (GOOD.replace("wmt16", "wmt99"), [], "no dataset named 'wmt99' (known: wmt16)"),
        "resume.toml": (GOOD, ["--resume"], "no sweep named 'lr' to resume (known: none)"),
    }
    for file, (text, extra, message) in cases.items():
        path = tmp_path / file
        path.write_text(text, encoding="utf-8")
        result = runner.invoke(cli, ["sweep", "run", str(path), "--name", "lr", "--trials", "2", *extra])
        assert result.exit_code == 2, (file, result.output)
        assert message in result.output, (file, result.output)
    assert not (load_settings().catalog_file.parent / SQLITE_FILE).exists()  # no study storage made
    shown = runner.invoke(cli, ["sweep", "show"])
    assert shown.exit_code == 0 and "no sweeps yet" in shown.output
    missing = runner.invoke(cli, ["sweep", "show", "lr"])
    assert missing.exit_code == 2 and "no sweep named 'lr' (known: none)" in missing.output
    assert not (load_settings().catalog_file.parent / SQLITE_FILE).exists()
