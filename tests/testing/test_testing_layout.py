"""mcpsync.testing's layout: imports point one way, only the faces import the FakeServer, modules stay small.

Read from the source with :mod:`ast`, so a function-level import counts as much
as a module-level one, and an import under ``if TYPE_CHECKING:`` as much as one
that runs: a type checker follows it, so it may close no circle either, and no
module below the FakeServer's may name it (the classes whose public annotations
name it, ``Context`` and ``FakeTransport``, live beside it).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Set

from ..conftest import ROOT

PACKAGE = "mcpsync.testing"
FOLDER = ROOT / "mcpsync" / "testing"
#: The public faces: the only modules that may import the FakeServer's module.
FACES = {"mcpsync.testing", "mcpsync.testing._unittest", "mcpsync.testing.pytest_plugin"}


def _module_name(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def _nodes(tree: ast.AST, typing_too: bool) -> Iterator[ast.AST]:
    """Every node, leaving out those under ``if TYPE_CHECKING:`` unless ``typing_too``."""
    for node in ast.iter_child_nodes(tree):
        if not typing_too and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                yield child
                yield from _nodes(child, typing_too)
            continue
        yield node
        yield from _nodes(node, typing_too)


def _imports(path: Path, typing_too: bool = False) -> Set[str]:
    """The ``mcpsync.testing`` modules ``path`` imports when it runs (or names at all, ``typing_too``)."""
    package_parts = PACKAGE.split(".")
    modules = {_module_name(p) for p in FOLDER.glob("*.py")}
    found: Set[str] = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8")), typing_too):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package_parts[:len(package_parts) - node.level + 1] + ([base] if base else []))
            # ``from pkg import mod`` imports ``pkg.mod`` (and only the package, ``pkg``, for a name in it)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found |= {target for target in targets if target in modules}
    return found


def _graph(typing_too: bool = False) -> Dict[str, Set[str]]:
    return {_module_name(path): _imports(path, typing_too) - {_module_name(path)} for path in FOLDER.glob("*.py")}


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Type-only imports included: no circle even for a type checker."""
    graph = _graph(typing_too=True)
    cycles: List[List[str]] = []

    def visit(module: str, trail: List[str]) -> None:
        for target in sorted(graph[module]):
            if target in trail:
                cycles.append(trail[trail.index(target):] + [target])
            elif target not in done:
                visit(target, trail + [target])
        done.add(module)

    done: Set[str] = set()
    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert cycles == []


def test_only_the_faces_import_the_fake_server() -> None:
    importers = {module for module, targets in _graph(typing_too=True).items() if f"{PACKAGE}._server" in targets}
    assert importers <= FACES


def test_every_module_opens_with_its_job() -> None:
    # No length cap: a module's length follows its job (tests/test_architecture.py keeps the
    # pressure on classes and functions instead).
    for path in FOLDER.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{path.name} has no module docstring"
