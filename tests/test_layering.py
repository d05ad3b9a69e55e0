"""The house's arrows point down: cli -> flows -> workers -> platform.

Every module's imports are read from its AST, lazy imports inside functions included (a lazy import
hides a dependency, it does not remove it). ``platform/`` (the core, ``assay.*``) imports neither
``assay.flows``, ``assay.workers`` nor ``assay.cli``; ``workers/`` imports no flows and no CLI;
``flows/`` does not import the CLI. Metrics in ``workers/`` reach the platform's registry through
entry points (a string in ``pyproject.toml``), which is how a downward arrow is kept.
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
    "platform/assay": ("assay", ("assay.cli", "assay.flows", "assay.workers")),
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


def _walk(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "fixtures" not in p.parts)


def _violations() -> list[str]:
    problems = []
    for folder, (package, forbidden) in LAYERS.items():
        for path in _walk(folder):
            module = _module_name(package, ROOT / folder, path)
            if folder == "platform/assay" and module.startswith(("assay.cli", "assay.flows", "assay.workers")):
                continue
            for line, target, _ in _imports(path, module):
                if any(target == f or target.startswith(f + ".") for f in forbidden):
                    problems.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {target}")
    return problems


def test_arrows_point_down() -> None:
    assert _violations() == []


def _import_strings(path: Path) -> list[tuple[int, str]]:
    """String constants naming an upper layer's module (``"assay.workers.metrics:BERTScore"``), as
    handed to ``importlib``: an import by another name. Docstrings and comments are prose."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            and re.match(r"^assay\.(cli|flows|workers)([.:]|$)", node.value)]


def test_platform_names_no_upper_module_in_strings() -> None:
    problems = [f"{path.relative_to(ROOT)}:{line}: {text}" for path in _walk("platform/assay")
                for line, text in _import_strings(path)]
    assert problems == []


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


@pytest.mark.parametrize("folder", ["cli", "flows", "workers", "platform/assay"])
def test_every_folder_parses(folder: str) -> None:
    assert _walk(folder)
