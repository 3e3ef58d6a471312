"""actrec's packages form layers: no package imports, through any chain, one that imports it
back. Every import counts, those inside functions too (they hide a tie from a module-level
check, not from the running program). A package is actrec.X: actrec/X/ with everything
under it, or the top-level module actrec/X.py."""

from __future__ import annotations

import ast
from itertools import pairwise
from pathlib import Path

from repo_paths import REPO_ROOT


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The absolute names of the modules `node` imports (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        anchor = here[: len(here) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    if base != "actrec":
        return [base]
    # `from actrec import config` imports the package actrec.config (`__version__`: a name).
    return [f"actrec.{alias.name}" for alias in node.names if not alias.name.startswith("__")]


def _package(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "actrec" and len(parts) > 1 else None


def package_imports(root: Path) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> "file:line" of each import that ties them,
    over every .py file under `root` (an `actrec` folder)."""
    ties: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        source = _package(module)
        if source is None:
            continue
        where = path.relative_to(root.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for imported in _imported_modules(node, module, path.name == "__init__.py"):
                target = _package(imported)
                if target is not None and target != source:
                    ties.setdefault((source, target), []).append(f"{where}:{node.lineno}")
    return ties


def _cycle_through(start: str, edges: dict[str, set[str]]) -> list[str] | None:
    """A shortest path start -> ... -> start, or None."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for successor in sorted(edges.get(node, ())):
            if successor == start:
                return [*paths[node], start]
            if successor not in paths:
                paths[successor] = [*paths[node], successor]
                queue.append(successor)
    return None


def package_cycles(ties: dict[tuple[str, str], list[str]]) -> list[str]:
    """One line per cycle (each package in at most one): its edges with an import each."""
    edges: dict[str, set[str]] = {}
    for source, target in ties:
        edges.setdefault(source, set()).add(target)
    reported: set[str] = set()
    cycles = []
    for package in sorted(edges):
        if package in reported:
            continue
        cycle = _cycle_through(package, edges)
        if cycle is None:
            continue
        reported.update(cycle)
        cycles.append(
            " ; ".join(
                f"{source} -> {target} ({ties[(source, target)][0]})"
                for source, target in pairwise(cycle)
            )
        )
    return cycles


def test_actrec_has_no_package_cycle():
    ties = package_imports(REPO_ROOT / "actrec")
    assert ("actrec.train", "actrec.models") in ties  # the walk sees the tree
    cycles = package_cycles(ties)
    assert not cycles, "package cycles (a package must not import one above it):\n" + "\n".join(
        cycles
    )


def test_the_check_sees_imports_inside_functions_and_relative_imports(tmp_path):
    root = tmp_path / "actrec"
    for folder in ("low", "high"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "errors.py").write_text("")
    (root / "high" / "user.py").write_text("from ..low import base\nfrom actrec import errors\n")
    (root / "low" / "base.py").write_text(
        "import actrec.errors\n\n\ndef lazy():\n    from actrec.high.user import lazy\n"
    )
    ties = package_imports(root)
    assert ties == {
        ("actrec.high", "actrec.low"): ["actrec/high/user.py:1"],
        ("actrec.high", "actrec.errors"): ["actrec/high/user.py:2"],
        ("actrec.low", "actrec.errors"): ["actrec/low/base.py:1"],
        ("actrec.low", "actrec.high"): ["actrec/low/base.py:5"],
    }
    assert package_cycles(ties) == [
        "actrec.high -> actrec.low (actrec/high/user.py:1) ; "
        "actrec.low -> actrec.high (actrec/low/base.py:5)"
    ]


def _code_files_naming(word: str) -> list[str]:
    """The code files of actrec/ and cli/ whose code (docstrings and comments aside) holds
    `word` as a string or as a name."""
    found = []
    for path in sorted([*(REPO_ROOT / "actrec").rglob("*.py"), *(REPO_ROOT / "cli").rglob("*.py")]):
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            names = {
                getattr(node, "id", None),
                getattr(node, "attr", None),
                getattr(node, "arg", None),
            }
            text = node.value if isinstance(node, ast.Constant) else None
            if word in names or (
                isinstance(text, str) and id(node) not in docstrings and word in text.split(".")
            ):
                found.append(path.relative_to(REPO_ROOT).as_posix())
                break
    return found


def test_a_setting_and_a_source_are_named_in_few_code_files():
    """Issue 53: the shift's settings are said once (actrec.config.recipe.SHIFT_SETTINGS), a
    published source in its module (actrec.published.sources) and the preprocessing table."""
    assert _code_files_naming("shift_fraction") == [
        "actrec/config/recipe.py",
        "actrec/models/segment_model.py",
        "actrec/published/sources/tsm.py",
    ]
    assert _code_files_naming("mmaction2") == [
        "actrec/backbones/spec.py",
        "actrec/published/sources/mmaction2.py",
    ]


def test_train_s_top_holds_its_entry_and_rooms():
    top = sorted(path.name for path in (REPO_ROOT / "actrec" / "train").iterdir())
    modules = [name for name in top if name.endswith(".py")]
    assert len(modules) <= 12 and "run.py" in modules, modules
