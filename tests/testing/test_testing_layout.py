"""mcpsync.testing's layout: imports point one way, only the faces import the FakeServer, modules stay small.

Read from the source with :mod:`ast`, so a function-level import counts as much
as a module-level one. Imports under ``if TYPE_CHECKING:`` never run, so they
make no cycle; but they still count for who may name the FakeServer's module,
where two annotations of the public API are the only exceptions.
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
#: Parts that name ``FakeServer`` for an annotation only (``Context.server``, ``FakeTransport(server)``,
#: the server a cassette is loaded into).
ANNOTATES_THE_SERVER = {"mcpsync.testing._context", "mcpsync.testing._memory", "mcpsync.testing._from_cassette"}


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
    found: Set[str] = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8")), typing_too):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package_parts[:len(package_parts) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        modules = {_module_name(p) for p in FOLDER.glob("*.py")}
        found |= {target for target in targets if target in modules}
    return found


def _graph(typing_too: bool = False) -> Dict[str, Set[str]]:
    return {_module_name(path): _imports(path, typing_too) - {_module_name(path)} for path in FOLDER.glob("*.py")}


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = _graph()
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
    assert importers <= FACES | ANNOTATES_THE_SERVER
    run_time = {module for module, targets in _graph().items() if f"{PACKAGE}._server" in targets}
    assert run_time <= FACES


def test_every_module_opens_with_its_job() -> None:
    # No length cap: a module's length follows its job (tests/test_architecture.py keeps the
    # pressure on classes and functions instead).
    for path in FOLDER.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{path.name} has no module docstring"
