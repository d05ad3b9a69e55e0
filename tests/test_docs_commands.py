"""Every `assay` command that README.md and docs/TEAM.md show parses as written (issue 17, finding 8).

Each line of a ``sh`` code block that starts with ``assay`` is split like a shell would (comments
dropped, ``$VAR`` and ``...`` left as words), its command path is resolved through the CLI's groups,
and the command's own parser reads the rest: an unknown command or option, a bad choice or a
missing argument fails here instead of in a new team's terminal. Paths the docs name (``/shared/...``)
are replaced by existing temporary folders, since some arguments must exist. Nothing is run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from assay.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "TEAM.md"]
BLOCK = re.compile(r"```(?:sh|bash|console)\n(.*?)```", re.S)


def expand(synopsis: str) -> list[str]:
    """The commands a synopsis line stands for: ``[...]`` parts included (the first of ``a | b``
    inside them), and top-level ``a | b | c`` alternatives after ``assay GROUP`` (README's notation)."""
    line = re.sub(r"\[([^\[\]]*)\]", lambda m: m.group(1).split(" | ")[0], synopsis)
    first, *others = [part.strip() for part in line.split(" | ")]
    prefix = " ".join(first.split()[:2])
    return [first] + [f"{prefix} {alternative}" for alternative in others]


def documented_commands() -> list[tuple[str, int, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for block in BLOCK.finditer(text):
            first_line = text[:block.start()].count("\n") + 2
            lines = block.group(1).splitlines()
            for offset, line in enumerate(lines):
                while line.rstrip().endswith("\\") and offset + 1 < len(lines):  # a continued line
                    offset += 1
                    line = line.rstrip()[:-1] + " " + lines[offset]
                command = line.split(" #")[0].strip()
                if command.startswith("assay "):
                    found += [(doc.name, first_line + offset, c) for c in expand(command)]
    return found


def _args(command: str, tmp: Path) -> list[str]:
    words = shlex.split(command)[1:]
    out = []
    for word in words:
        if word.startswith(("/shared/", "../shared/", "/path/")) or word in ("PATH", "DIR", "FOLDER"):
            folder = tmp / word.strip("/").replace("/", "_")
            folder.mkdir(exist_ok=True)
            word = str(folder)
        out.append(word)
    return out


COMMANDS = documented_commands()


def test_the_docs_show_assay_commands() -> None:
    assert len(COMMANDS) > 20 and any(c for _, _, c in COMMANDS if c.startswith("assay nightly status"))


@pytest.mark.parametrize(("doc", "line", "command"), COMMANDS, ids=[f"{d}:{n}" for d, n, _ in COMMANDS])
def test_a_documented_command_parses(doc: str, line: int, command: str, tmp_path: Path) -> None:
    args = _args(command, tmp_path)
    ctx = cli.make_context("assay", list(args), resilient_parsing=True)
    group: click.Command = cli
    rest = list(args)
    while isinstance(group, click.Group) and rest and not rest[0].startswith("-"):
        name, sub, rest = group.resolve_command(ctx, rest)
        assert sub is not None, f"{doc}:{line}: `{command}`: no command {name!r}"
        group = sub
        if isinstance(group, click.Group) and rest and not rest[0].startswith("-"):
            ctx = group.make_context(name or "", list(rest), parent=ctx, resilient_parsing=True)
    if "--help" in rest or "-h" in rest:
        return
    try:
        group.make_context(group.name or "", list(rest), parent=ctx)
    except click.UsageError as exc:
        pytest.fail(f"{doc}:{line}: `{command}` does not parse: {exc.format_message()}")
