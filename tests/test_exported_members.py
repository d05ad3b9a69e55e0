"""Every package says what it exports, and every exception belongs to the one tree in ``errors.py``
(httpx's ``tests/test_exported_members.py``, over every package of a layered project).

The convention, stated in each package's docstring: a package's ``__all__`` names its public
modules (every ``.py`` file and subpackage whose name does not start with ``_``) and the public
names its ``__init__`` defines or re-exports. A name imported into an ``__init__`` and used there is
a helper; one imported and not used there (or imported for type checkers only, as ``assay.metrics``
does for the names it imports lazily) is a re-export. No name of an ``__init__`` hides one of its
modules, unless it comes from that module (``assay.stats.spa`` is the function of ``spa.py``):
``from assay.report.sections import drift`` in ``assay.report`` made ``assay.report.drift`` the
section, not ``report/drift.py``. The packages are found by walking the layers' folders and read from
their source, so a new module or package is checked without being listed here, and the check
imports nothing (no torch, no Prefect).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import assay.errors as errors

ROOT = Path(__file__).resolve().parents[1]
#: the folders of the installed layers and their packages (pyproject.toml's package-dir);
#: ``migrations/`` holds Alembic's scripts, run by Alembic, not imported
LAYERS = {"platform/assay": "assay", "cli": "assay.cli", "flows": "assay.flows", "workers": "assay.workers"}
ERRORS_FILE = ROOT / "platform/assay/errors.py"


def _packages(root: Path = ROOT) -> list[Path]:
    """Every package folder (one with an ``__init__.py``) of the layers."""
    return sorted(init.parent for layer in LAYERS for init in (root / layer).rglob("__init__.py"))


def _package_name(package: Path, root: Path) -> str:
    for folder, name in LAYERS.items():
        if package.is_relative_to(root / folder):
            return ".".join([name, *package.relative_to(root / folder).parts])
    raise ValueError(f"{package} is in no layer")


def _modules(package: Path) -> set[str]:
    files = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    return files | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run when the module is imported, through ``if`` (``TYPE_CHECKING``) and ``try``."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body + node.orelse + node.finalbody
                                  + [s for h in node.handlers for s in h.body])


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in _top_level(tree.body):
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, ast.List | ast.Tuple)):
            return [ast.literal_eval(element) for element in node.value.elts]
    return None


def _bindings(tree: ast.Module, package: str) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """(names the package's ``__init__`` defines: functions, classes, variables; names it imports,
    each with the module and the name it is imported from)."""
    defined: set[str] = set()
    imported: dict[str, tuple[str, str]] = {}
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = package.split(".")[: len(package.split(".")) + 1 - node.level] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            imported |= {alias.asname or alias.name: (source, alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            imported |= {alias.asname or alias.name.split(".")[0]: (alias.name, "") for alias in node.names}
    defined.discard("__all__")
    return defined, imported


def _problems(package: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with ``package``'s ``__all__``: missing, or not its public modules and names."""
    init = package / "__init__.py"
    where = init.relative_to(root)
    tree = ast.parse(init.read_text(encoding="utf-8"), filename=str(init))
    name = _package_name(package, root)
    defined, imported = _bindings(tree, name)
    modules = _modules(package)
    problems = [f"{where}: {bound!r} hides the module {name}.{bound}" for bound in sorted(defined & modules)]
    problems += [f"{where}: {bound!r} is imported from {source}, which hides the module {name}.{bound}"
                 for bound, (source, original) in sorted(imported.items()) if bound in modules
                 and source != f"{name}.{bound}" and (source, original) != (name, bound)]
    declared = _declared_all(tree)
    if declared is None:
        return [*problems, f"{where}: no __all__ (a list of strings)"]
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    public_modules = {module for module in modules if not module.startswith("_")}
    required = public_modules | {n for n in defined | (set(imported) - used) if not n.startswith("_")}
    allowed = required | defined | set(imported)
    problems += [f"{where}: __all__ misses {n!r}" for n in sorted(required - set(declared))]
    problems += [f"{where}: __all__ names {n!r}, which is neither a module of the package nor bound in it"
                 for n in sorted(set(declared) - allowed)]
    problems += [f"{where}: __all__ names {n!r} twice" for n in sorted(set(declared)) if declared.count(n) > 1]
    return problems


def test_the_layers_have_packages() -> None:
    found = {p.relative_to(ROOT).as_posix() for p in _packages()}
    assert {"platform/assay", "platform/assay/jobs", "cli", "flows", "workers"} <= found


@pytest.mark.parametrize("package", _packages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_all_lists_the_public_modules_and_names(package: Path) -> None:
    assert _problems(package) == []


def test_the_checker_sees_a_module_or_name_left_out(tmp_path: Path) -> None:
    """The rule itself: each defect of an ``__init__`` below is reported, and nothing else is."""
    package = tmp_path / "workers" / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "__init__.py").write_text("")
    for name in ("listed", "new_module", "_private"):
        (package / f"{name}.py").write_text("")
    (package / "__init__.py").write_text(
        "from pathlib import Path\n"
        "from pkg.listed import exported, helper\n"
        "from pkg.listed import kept\n"
        "CONSTANT = 1\n"
        "def f(p: Path) -> None:\n"
        "    helper(p)\n"
        "__all__ = ['listed', 'sub', 'exported', 'f', 'gone', 'f']\n"
    )
    assert _problems(package, tmp_path) == [
        "workers/pkg/__init__.py: __all__ misses 'CONSTANT'",
        "workers/pkg/__init__.py: __all__ misses 'kept'",
        "workers/pkg/__init__.py: __all__ misses 'new_module'",
        "workers/pkg/__init__.py: __all__ names 'gone', which is neither a module of the package nor bound in it",
        "workers/pkg/__init__.py: __all__ names 'f' twice",
    ]
    (package / "__init__.py").write_text(
        "from . import listed\n"                   # the module itself
        "from .sub import sub\n"                   # a name of that module, as assay.stats.spa
        "from assay.workers.pkg.sub import new_module\n"  # hides pkg/new_module.py
        "def _private(): ...\n"                    # hides pkg/_private.py
    )
    assert _problems(package, tmp_path) == [
        "workers/pkg/__init__.py: '_private' hides the module assay.workers.pkg._private",
        "workers/pkg/__init__.py: 'new_module' is imported from assay.workers.pkg.sub, which hides the module "
        "assay.workers.pkg.new_module",
        "workers/pkg/__init__.py: no __all__ (a list of strings)",
    ]


# ---------------------------------------------------------------------------------------------
# One exception tree
# ---------------------------------------------------------------------------------------------


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _exception_classes(root: Path = ROOT) -> list[tuple[str, str]]:
    """(``file:line``, class name) of every exception class defined in the layers, warnings aside.

    Read from the source: a class is an exception when one of its bases is a built-in exception, a
    class of ``assay.errors``, a name ending in ``Error`` or ``Exception`` (another library's), or
    another exception class of the project (followed until nothing changes). A subclass of a
    ``Warning`` is a warning category (``warnings.warn``), not an error."""
    builtin = {name: value for name, value in vars(builtins).items()
               if isinstance(value, type) and issubclass(value, BaseException)}
    warnings = {name for name, value in builtin.items() if issubclass(value, Warning)}
    exceptions = (set(builtin) - warnings) | {name for name, value in vars(errors).items() if isinstance(value, type)}
    classes = []
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            classes += [(f"{path.relative_to(root)}:{node.lineno}", node.name,
                         {name for name in map(_base_name, node.bases) if name})
                        for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    found: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for where, name, bases in classes:
            if where in found or bases & warnings:
                continue
            if bases & exceptions or any(re.search(r"(Error|Exception)$", b) for b in bases):
                found[where] = name
                exceptions.add(name)
                changed = True
    return [(where, name) for where, name, _ in classes if where in found]


def test_every_exception_is_defined_in_errors_py() -> None:
    errors_file = ERRORS_FILE.relative_to(ROOT).as_posix()
    elsewhere = [f"{where} {name}" for where, name in _exception_classes() if not where.startswith(errors_file + ":")]
    assert elsewhere == []


def test_every_exception_derives_from_assay_error_and_is_in_the_docstring() -> None:
    classes = [value for value in vars(errors).values()
               if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == errors.__name__]
    assert errors.AssayError in classes and len(classes) > 1
    assert [c.__name__ for c in classes if not issubclass(c, errors.AssayError)] == []
    assert errors.__doc__ is not None
    assert [c.__name__ for c in classes if f"``{c.__name__}``" not in errors.__doc__] == []


def test_the_exception_reader_sees_a_subclass_anywhere(tmp_path: Path) -> None:
    (tmp_path / "workers").mkdir()
    (tmp_path / "workers" / "mod.py").write_text(
        "import httpx\n"
        "from assay.errors import InputError\n"
        "class A(InputError): ...\n"
        "class B(A): ...\n"
        "class C(httpx.HTTPError): ...\n"
        "class D(KeyError): ...\n"
        "class W(UserWarning): ...\n"
        "class X(W): ...\n"
        "class Plain: ...\n"
        "def f():\n"
        "    class Local(ValueError): ...\n"
    )
    assert [name for _, name in _exception_classes(tmp_path)] == ["A", "B", "C", "D", "Local"]
