"""``assay formats`` lists what ``assay ingest`` can read, straight from the format registry (issue 28:
``assay ingest --help`` pointed to an ``assay formats`` that did not exist), and every `assay ...`
command a help text names exists."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import click
from click.testing import CliRunner

from assay.cli.main import cli
from assay.datasets.formats import registry


def test_formats_lists_every_registered_format_in_detection_order() -> None:
    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["formats", "--json"], catch_exceptions=False).output)
    assert listed == [{"name": name, "description": fmt.description} for name, fmt in registry().items()]
    assert {"wmt-da", "mqm-tsv", "generic"} <= {row["name"] for row in listed}  # the formats of the README's tour
    text = runner.invoke(cli, ["formats"], env={"COLUMNS": "400"}, catch_exceptions=False).output
    assert [line.split("│")[1].strip() for line in text.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()] == list(registry())
    for fmt in registry().values():  # the description whole (wide enough not to wrap)
        assert fmt.description in text


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


def test_every_command_a_help_text_names_exists() -> None:
    named = re.compile(r"`assay ([a-z][a-z0-9-]*)(?: ([a-z][a-z0-9-]*))?")
    seen = 0
    assert isinstance(cli, click.Group)
    for path, command in _commands(cli):
        texts = [command.help or ""] + [p.help or "" for p in command.params if isinstance(p, click.Option)]
        for match in (m for text in texts for m in named.finditer(text)):
            seen += 1
            first, second = match.groups()
            assert first in cli.commands, f"assay {' '.join(path)}: its help names {match.group(0)}`"
            group = cli.commands[first]
            if second and isinstance(group, click.Group):
                assert second in group.commands, f"assay {' '.join(path)}: its help names {match.group(0)}`"
    assert seen >= 5  # the help texts do name commands (ingest's --format names `assay formats`)
    ingest = cli.commands["ingest"]
    assert any("`assay formats`" in (p.help or "") for p in ingest.params if isinstance(p, click.Option))
