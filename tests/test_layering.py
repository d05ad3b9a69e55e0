"""The house's arrows point down: cli -> flows -> workers -> platform, and migrations -> platform.

Every module's imports are read from its AST, lazy imports inside functions included (a lazy import
hides a dependency, it does not remove it), and so are string constants that name a module of a
layer above (``"assay.workers.metrics:BERTScore"`` handed to ``importlib`` is an import by another
name). ``platform/`` (the core, ``assay.*``) imports neither ``assay.flows``, ``assay.workers``,
``assay.cli`` nor ``assay.migrations`` (whose ``env.py`` imports the catalog); ``workers/`` imports no
flows and no CLI; ``flows/`` does not import the CLI. Metrics in ``workers/`` and the Alembic scripts in
``migrations/`` reach the platform through entry points (a string in ``pyproject.toml``), which is how
a downward arrow is kept.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# folder -> (the package it is installed as, the packages it must never import)
LAYERS = {
    "platform/assay": ("assay", ("assay.cli", "assay.flows", "assay.workers", "assay.migrations")),
    "workers": ("assay.workers", ("assay.cli", "assay.flows")),
    "flows": ("assay.flows", ("assay.cli",)),
    "migrations": ("assay.migrations", ("assay.cli", "assay.flows", "assay.workers")),
}
HEAVY_IN_PLATFORM = ("torch", "transformers", "prefect")


def _module_name(package: str, folder: Path, path: Path) -> str:
    parts = list(path.relative_to(folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([package, *parts])


def _imports(path: Path, module: str) -> list[tuple[int, str, bool]]:
    """(line, imported module, at module level?) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    top_level = {id(node) for node in tree.body}
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target, id(node) in top_level))
            # `from assay import flows` imports the subpackage
            found += [(node.lineno, f"{target}.{alias.name}", id(node) in top_level) for alias in node.names]
    return found


def _walk(folder: str, root: Path = ROOT) -> list[Path]:
    return sorted(p for p in (root / folder).rglob("*.py") if "fixtures" not in p.parts)


def _names_forbidden(target: str, forbidden: tuple[str, ...]) -> bool:
    return any(target == f or target.startswith((f + ".", f + ":")) for f in forbidden)


def _import_strings(path: Path) -> list[tuple[int, str]]:
    """String constants that name a module of Assay (``"assay.workers.metrics:BERTScore"``), as handed
    to ``importlib``: an import by another name. Docstrings and comments are prose."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            and re.match(r"^assay\.\w+([.:]|$)", node.value)]


def _violations(root: Path = ROOT) -> list[str]:
    """Every import, and every string naming a module, that points from a layer to one above it."""
    problems = []
    for folder, (package, forbidden) in LAYERS.items():
        for path in _walk(folder, root):
            module = _module_name(package, root / folder, path)
            where = path.relative_to(root)
            for line, target, _ in _imports(path, module):
                if _names_forbidden(target, forbidden):
                    problems.append(f"{where}:{line}: {module} imports {target}")
            for line, named in _import_strings(path):
                if _names_forbidden(named, forbidden):
                    problems.append(f"{where}:{line}: {module} names {named!r}")
    return problems


def test_arrows_point_down() -> None:
    """No import and no string naming a module points up: the arrows up are 0."""
    assert _violations() == []


def test_platform_imports_no_heavy_framework_at_module_level() -> None:
    problems = []
    for path in _walk("platform/assay"):
        module = _module_name("assay", ROOT / "platform/assay", path)
        for line, target, top in _imports(path, module):
            if top and target.split(".")[0] in HEAVY_IN_PLATFORM:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert problems == []


def test_platform_never_imports_prefect() -> None:
    """Jobs are plain Python; only flows/ wrap them in Prefect."""
    problems = []
    for path in _walk("platform/assay"):
        module = _module_name("assay", ROOT / "platform/assay", path)
        problems += [f"{path.relative_to(ROOT)}:{line}" for line, target, _ in _imports(path, module)
                     if target.split(".")[0] == "prefect"]
    assert problems == []


def test_the_checker_sees_a_lazy_upward_import(tmp_path: Path) -> None:
    """The walker must catch an import inside a function, relative or absolute."""
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from assay.flows.score import score_flow\n    from ..workers import x\n")
    targets = [t for _, t, top in _imports(source, "assay.jobs.mod") if not top]
    assert "assay.flows.score" in targets
    assert "assay.workers" in targets


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A copy of the layers' folders holding only ``files`` (path -> source)."""
    for folder in LAYERS:
        (root / folder).mkdir(parents=True, exist_ok=True)
    for name, source in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(source)
    return root


def test_the_checker_sees_upward_strings_and_the_migrations_arrow(tmp_path: Path) -> None:
    """A string naming an upper layer's module, in any layer, and an import of the migrations from the
    platform are arrows up; docstrings, and strings naming a lower layer, are not."""
    root = _tree(tmp_path, {
        "flows/runner.py": '"""Run by assay.cli.main."""\nTARGET = "assay.cli.main:main"\nOK = "assay.jobs.scoring"\n',
        "workers/plugin.py": 'import importlib\nmod = importlib.import_module("assay.flows.score")\n',
        "platform/assay/catalog/where.py": "def f():\n    import assay.migrations\n",
        "platform/assay/catalog/named.py": 'SCRIPTS = "assay.migrations"\n',
        "migrations/env.py": "from assay.catalog.engine import make_engine\n",
    })
    assert sorted(_violations(root)) == [
        "flows/runner.py:2: assay.flows.runner names 'assay.cli.main:main'",
        "platform/assay/catalog/named.py:1: assay.catalog.named names 'assay.migrations'",
        "platform/assay/catalog/where.py:2: assay.catalog.where imports assay.migrations",
        "workers/plugin.py:2: assay.workers.plugin names 'assay.flows.score'",
    ]


def test_pyproject_lists_every_package() -> None:
    """Several source roots are mapped into ``assay``, so packages are listed explicitly; none may be missing."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    roots = {"assay": "platform/assay", **{k: v for k, v in config["package-dir"].items() if k}}
    found = set()
    for package, folder in roots.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            name = ".".join([package, *rel])
            if not any(name.startswith(other + ".") or name == other
                       for other in roots if other != package and other.startswith(package + ".")):
                found.add(name)
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - found == set(), "these packages no longer exist"


@pytest.mark.parametrize("folder", ["cli", "flows", "workers", "migrations", "platform/assay"])
def test_every_folder_parses(folder: str) -> None:
    """Every module the checks above read compiles (a file that does not parse would hide its imports),
    ``compile`` also refuses what a bare parse accepts (``return`` outside a function, for one)."""
    paths = _walk(folder)
    assert ROOT / folder / "__init__.py" in paths and len(paths) > 1
    for path in paths:
        compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
