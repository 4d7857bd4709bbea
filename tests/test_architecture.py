"""The package's shape (issue 11): no import cycles, an MCP-agnostic RPC layer, no private reach-ins,
stable public module paths, honest ``__all__`` lists, short classes and functions, bounded branching
and a light ``import mcpsync``. Module length is reported, not capped: a module's first docstring
line names its one job, and that job, not a line count, decides what it holds.

The layering itself (which layer may import which) is import-linter's job: the contracts are in
setup.cfg and ``.ci/run`` runs ``lint-imports``. These tests check what a layers contract cannot.
Everything here reads the source or imports it in this process, except two bounded subprocesses
(ruff, and a fresh interpreter for the import-weight check); the whole file takes about a second.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "mcpsync"

# Every module path a user can import today (issue 11: "every public module path a user can import
# today still imports"). A moved module leaves its old public path importable; a new public path is
# added here deliberately.
PUBLIC_MODULES = [
    "mcpsync",
    "mcpsync.auth",
    "mcpsync.cancel",
    "mcpsync.capabilities",
    "mcpsync.cli",
    "mcpsync.client",
    "mcpsync.config",
    "mcpsync.exceptions",
    "mcpsync.handlers",
    "mcpsync.llm",
    "mcpsync.manager",
    "mcpsync.progress",
    "mcpsync.skills",
    "mcpsync.stateless",
    "mcpsync.subscriptions",
    "mcpsync.tasks",
    "mcpsync.testing",
    "mcpsync.testing.pytest_plugin",
    "mcpsync.transports",
    "mcpsync.transports.base",
    "mcpsync.transports.memory",
    "mcpsync.transports.sse",
    "mcpsync.transports.stdio",
    "mcpsync.transports.streamable_http",
    "mcpsync.types",
]

# Size guards the units people read, not files (issue 21).
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 80
# Today's offenders, each to be split along its jobs when next worked on; the figure is its length
# when it was listed, and it may not grow past it. A unit that shrinks under the limit must leave
# the list (the test says so).
LONG_CLASSES = {
    "mcpsync._rpc.engine.Engine": 474,  # requests, notifications, peer requests and close in one state
    "mcpsync.client.Client": 624,  # the facade: lifecycle, and one delegating method per MCP request (most of it docs)
    "mcpsync.manager.Manager": 597,  # the fleet facade: one short method per operation
    "mcpsync.testing._connection.Connection": 419,  # the fake server's side of one connection
    "mcpsync.testing._server.FakeServer": 471,  # the fake server's public registry surface
    "mcpsync.transports.streamable_http.StreamableHTTPTransport": 498,  # POST, GET stream, session, fallback
}
LONG_FUNCTIONS = {
    # defines the requests-based classes inside a function so requests loads late
    "mcpsync.transports._http_session._session_classes": 202,
}
# radon's blocks rated C or worse, per 1,000 lines of source. The aim is requests' 2.0; today's
# figure is pinned (3.88 when issue 21 began, 4.09 once that step met the security, delivery,
# telemetry and cassette work, 0.71 once every C-or-worse function of the package was split
# along its jobs), and the pin only ever moves down (a ratchet):
# lower it when the figure falls.
RADON_AIM = 2.0
RADON_CEILING = 0.8
RADON_RATCHET_SLACK = 0.3  # the figure this far under the pin: lower the pin

# The RPC layer and the method names it must not know (issue 11, rule 2).
RPC_PACKAGE = "mcpsync._rpc"
_METHOD_FAMILIES = ("server", "tools", "resources", "prompts", "sampling", "elicitation", "roots", "tasks",
                    "logging", "completion", "subscriptions", "notifications", "skills")
_PREFIXED_METHOD = re.compile(r"(?<![\w/])(?:%s)/[A-Za-z_][\w/]*" % "|".join(_METHOD_FAMILIES))
_BARE_METHODS = {"initialize", "ping"}  # whole-string constants only: as words they are plain English
# The JSON-RPC cancel and progress notifications are the engine's own job; it alone may spell them.
ENGINE_NOTIFICATIONS_MODULE = "mcpsync._rpc.jsonrpc"
ENGINE_NOTIFICATIONS = {"notifications/cancelled", "notifications/progress"}

HTTP_STACK = ("requests", "urllib3", "sseclient")

# The MCP vocabulary (issue 21): the one package that spells a method's name.
PROTOCOL_PACKAGE = "mcpsync._protocol"


# -- reading the package ------------------------------------------------------------------------


def package_modules() -> Dict[str, Path]:
    """Every module of the package by dotted name (``mcpsync.x.y``), a package by its ``__init__``."""
    found: Dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = package_modules()


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING``, ``_TYPE_CHECKING`` (an alias) or ``typing.TYPE_CHECKING``."""
    if isinstance(test, ast.Name):
        return test.id.lstrip("_") == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` that can run: the bodies of ``if TYPE_CHECKING:`` are left out
    (their ``else:`` is kept); function bodies are kept, so function-level imports count."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for statement in child.orelse:
                yield statement
                yield from runtime_nodes(statement)
            continue
        yield child
        yield from runtime_nodes(child)


def _longest_module(dotted: str) -> Optional[str]:
    """``dotted`` or its longest prefix that is one of the package's modules."""
    parts = dotted.split(".")
    while parts:
        name = ".".join(parts)
        if name in MODULES:
            return name
        parts.pop()
    return None


def all_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node``, those under ``if TYPE_CHECKING:`` included (what a type checker follows)."""
    for child in ast.iter_child_nodes(node):
        yield child
        yield from all_nodes(child)


def imports_of(name: str, typing_too: bool = False) -> List[Tuple[str, int]]:
    """The package modules ``name`` imports at run time (or, ``typing_too``, for a type checker too),
    each with the line of the import.

    Relative imports are resolved; ``from pkg import name`` counts as importing ``pkg.name`` when
    that is a module, else as importing ``pkg``. Parent packages are not counted (every submodule
    would otherwise import ``mcpsync``'s face and close a circle through it).
    """
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: List[Tuple[str, int]] = []
    for node in (all_nodes if typing_too else runtime_nodes)(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _longest_module(alias.name)
                if target is not None:
                    found.append((target, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                if node.level > 1:
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else _longest_module(base)
                if target is not None:
                    found.append((target, node.lineno))
    return [(target, line) for target, line in found if target != name]


def import_graph(typing_too: bool = False) -> Dict[str, Dict[str, List[int]]]:
    """module -> {imported module -> lines}."""
    graph: Dict[str, Dict[str, List[int]]] = {}
    for name in MODULES:
        edges: Dict[str, List[int]] = {}
        for target, line in imports_of(name, typing_too):
            edges.setdefault(target, []).append(line)
        graph[name] = edges
    return graph


def strongly_connected(graph: Dict[str, Dict[str, List[int]]]) -> List[List[str]]:
    """Tarjan's algorithm: the groups of modules that reach each other (sizes above one only)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    groups: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def shortest_cycle(graph: Dict[str, Dict[str, List[int]]], start: str, within: Set[str]) -> List[str]:
    """The shortest import path from ``start`` back to itself inside one group."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(graph[node]):
            if target == start:
                return paths[node] + [start]
            if target in within and target not in paths:
                paths[target] = paths[node] + [target]
                queue.append(target)
    return [start]


def _lines(lines: List[int]) -> str:
    return "l." + ",".join(map(str, sorted(set(lines))))


def describe_cycle(graph: Dict[str, Dict[str, List[int]]], group: List[str]) -> str:
    """One group: a shortest circle through its first member, then every import inside the group."""
    members = set(group)
    cycle = shortest_cycle(graph, group[0], members)
    circle = " -> ".join(cycle)
    edges = [f"    {a} -> {b} ({_lines(graph[a][b])})" for a in group for b in sorted(graph[a]) if b in members]
    return f"{len(group)} modules, e.g. {circle}; the imports among them:\n" + "\n".join(edges)


def _docstring_nodes(tree: ast.AST) -> Set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                ids.add(id(first.value))
    return ids


def _all_list_nodes(tree: ast.AST) -> Set[int]:
    """The string constants of ``__all__ = [...]``: names of the module's own, not values."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            ids.update(id(child) for child in ast.walk(node.value))
    return ids


def string_constants(name: str) -> Iterator[Tuple[int, str]]:
    """(line, text) of every string constant in a module's code (f-string parts included,
    docstrings and ``__all__`` excluded: they describe, they do not decide)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skipped = _docstring_nodes(tree) | _all_list_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            yield node.lineno, node.value


def mcp_methods_in(text: str) -> List[str]:
    if text.strip() in _BARE_METHODS:
        return [text.strip()]
    return _PREFIXED_METHOD.findall(text)


# -- the checks ---------------------------------------------------------------------------------


def test_no_import_cycle_among_the_package_modules() -> None:
    """Module-level and function-level imports alike; imports under ``if TYPE_CHECKING:`` excepted."""
    graph = import_graph()
    groups = strongly_connected(graph)
    assert not groups, "import cycles:\n" + "\n".join(describe_cycle(graph, group) for group in groups)


def test_no_import_cycle_even_for_a_type_checker() -> None:
    """Imports under ``if TYPE_CHECKING:`` count too: a type checker follows them, and a circle there is
    a part that cannot be read or checked without the one above it (``mcpsync.testing`` had three,
    around the FakeServer; a Protocol in a leaf, or what is needed passed down, breaks such a circle)."""
    graph = import_graph(typing_too=True)
    groups = strongly_connected(graph)
    assert not groups, "type-only import cycles:\n" + "\n".join(describe_cycle(graph, group) for group in groups)


def test_the_cycle_finder_sees_function_level_and_relative_imports() -> None:
    """The reader of the graph itself: a function-level relative import is an edge, a type-only one is not
    (unless asked for)."""
    graph = import_graph()
    assert "mcpsync.manager" in graph["mcpsync.cli"]  # ``from .manager import Manager`` inside a function
    assert "mcpsync.config" in graph["mcpsync.cli"]  # ``from . import config as mcpconfig``
    assert "mcpsync._rpc.jsonrpc" in graph["mcpsync._rpc.engine"]  # ``from . import jsonrpc as rpc``
    assert "mcpsync.auth" not in graph["mcpsync"]  # only under ``if _TYPE_CHECKING:`` (loaded lazily)
    assert "mcpsync.auth" in import_graph(typing_too=True)["mcpsync"]
    cyclic = {"a": {"b": [1]}, "b": {"c": [2]}, "c": {"a": [3]}, "d": {"a": [4]}}
    assert strongly_connected(cyclic) == [["a", "b", "c"]]


def test_the_rpc_layer_names_no_mcp_method() -> None:
    """``mcpsync/_rpc/`` is JSON-RPC only: era policy (which methods are never cancelled, whether peer
    requests are answered) is passed in. The two notifications the engine implements,
    ``notifications/cancelled`` and ``notifications/progress``, may be spelled in
    ``mcpsync/_rpc/jsonrpc.py`` (named once, as CANCELLED and PROGRESS) and nowhere else in the layer."""
    found = []
    for name in sorted(MODULES):
        if name != RPC_PACKAGE and not name.startswith(RPC_PACKAGE + "."):
            continue
        for line, text in string_constants(name):
            for method in mcp_methods_in(text):
                if name == ENGINE_NOTIFICATIONS_MODULE and method in ENGINE_NOTIFICATIONS:
                    continue
                found.append(f"{MODULES[name].relative_to(ROOT)}:{line}: {method!r}")
    assert not found, "MCP method names in the RPC layer:\n" + "\n".join(found)


def names_a_method(text: str) -> bool:
    """Whether a string constant *is* a method name (a value that decides), not prose mentioning one."""
    text = text.strip()
    return text in _BARE_METHODS or _PREFIXED_METHOD.fullmatch(text) is not None


def test_only_the_protocol_package_spells_method_names() -> None:
    """Every module names MCP methods and notifications through :mod:`mcpsync._protocol.methods`
    (the fake server in :mod:`mcpsync.testing` included), so a new method is one row there. Prose
    that mentions a method (a log line, an error message) is not a name and is allowed; so are the
    engine's own two notifications in ``_rpc/jsonrpc.py`` (the engine is MCP-free and imports none of it)."""
    found = []
    for name in sorted(MODULES):
        if name == PROTOCOL_PACKAGE or name.startswith(PROTOCOL_PACKAGE + "."):
            continue
        for line, text in string_constants(name):
            if not names_a_method(text):
                continue
            if name == ENGINE_NOTIFICATIONS_MODULE and text in ENGINE_NOTIFICATIONS:
                continue
            found.append(f"{MODULES[name].relative_to(ROOT)}:{line}: {text!r}")
    assert not found, "method names spelled outside mcpsync/_protocol (name them through it):\n" + "\n".join(found)


def test_the_method_table_names_every_method_constant() -> None:
    from mcpsync._protocol import methods

    requests = {value for key, value in vars(methods).items() if key.isupper() and isinstance(value, str)
                and names_a_method(value) and not value.startswith("notifications/")}
    server_to_client = {methods.SAMPLING_CREATE_MESSAGE, methods.ELICITATION_CREATE, methods.ROOTS_LIST}
    assert requests - server_to_client == set(methods.METHODS)
    assert names_a_method("tools/call") and not names_a_method("cancelled tools/call after 5s")


def test_the_method_name_check_tells_methods_from_prose() -> None:
    assert mcp_methods_in("server/discover") == ["server/discover"]
    assert mcp_methods_in("initialize") == ["initialize"]
    assert mcp_methods_in("cancelled tools/call after 5s") == ["tools/call"]
    assert mcp_methods_in("initialize the worker pool") == []
    assert mcp_methods_in("https://example.com/tools/x") == []
    assert mcp_methods_in("response to a ping") == []


def test_no_private_names_reached_across_objects() -> None:
    """ruff's SLF001 over the package: no ``obj._private`` outside ``self``/``cls`` (issue 11, rule 3).

    The allow-list lives in the code: an access that must stay carries an inline
    ``# noqa: SLF001 <why>`` comment on its line, saying why (for example ``other._data`` in an
    ``__eq__`` of the same class). Ruff runs isolated from any config file, with no cache written.
    """
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "SLF001",
         "--output-format", "concise", str(PACKAGE)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 0, f"private names reached into (ruff SLF001):\n{out.stdout}{out.stderr}"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_module_path_still_imports(name: str) -> None:
    module = importlib.import_module(name)
    assert Path(module.__file__ or "").resolve().is_relative_to(PACKAGE.resolve()), \
        f"{name} was imported from {module.__file__}, not from this checkout"


def test_every_all_lists_only_names_its_module_has() -> None:
    """Every module of the package that defines ``__all__`` has each name it lists (a lazily
    loaded name counts: ``getattr`` loads it)."""
    missing = []
    for name in sorted(MODULES):
        module = importlib.import_module(name)
        for public in getattr(module, "__all__", ()):
            if not hasattr(module, public):
                missing.append(f"{name}.{public}")
    assert not missing, f"names listed in __all__ that the module lacks: {missing}"


def test_the_exceptions_module_lists_every_exception_it_defines() -> None:
    import mcpsync.exceptions as exceptions

    defined = sorted(
        name for name, value in vars(exceptions).items()
        if isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_")
        and value.__module__ == exceptions.__name__
    )
    unlisted = [name for name in defined if name not in exceptions.__all__]
    assert not unlisted, f"mcpsync.exceptions defines but does not list in __all__: {unlisted}"


def drawn_exception_tree() -> Dict[str, Set[Optional[str]]]:
    """class -> the parents it is drawn under in :mod:`mcpsync.exceptions`' docstring (None: a root).
    A class with two bases of ours may be drawn under each."""
    import mcpsync.exceptions as exceptions

    drawn: Dict[str, Set[Optional[str]]] = {}
    parents: List[str] = []
    for line in (exceptions.__doc__ or "").splitlines():
        match = re.match(r"^ {4}([│├└─ ]*)([A-Z]\w+)\b", line)
        if match is None:
            continue
        depth = len(match.group(1)) // 4
        parents[depth:] = [match.group(2)]
        drawn.setdefault(match.group(2), set()).add(parents[depth - 1] if depth else None)
    return drawn


def test_the_exception_tree_is_drawn_whole() -> None:
    """Every public exception the package raises is in mcpsync/exceptions.py, and the tree in its
    docstring draws each one under its first base (issue 21)."""
    import mcpsync
    import mcpsync.exceptions as exceptions

    public = {name for name in mcpsync.__all__
              if isinstance(getattr(mcpsync, name), type) and issubclass(getattr(mcpsync, name), BaseException)}
    elsewhere = sorted(name for name in public if getattr(mcpsync, name).__module__ != exceptions.__name__)
    assert not elsewhere, f"exceptions defined outside mcpsync.exceptions: {elsewhere}"
    drawn = drawn_exception_tree()
    assert sorted(drawn) == sorted(exceptions.__all__), "the drawn tree and __all__ differ"
    wrong = []
    for name in exceptions.__all__:
        kind = getattr(exceptions, name)
        ours = [b for b in kind.__mro__[1:] if b.__module__ == exceptions.__name__ and not b.__name__.startswith("_")]
        first = ours[0].__name__ if ours else None
        if first not in drawn[name] or any(p is not None and not issubclass(kind, getattr(exceptions, p))
                                           for p in drawn[name]):
            wrong.append(f"{name}: drawn under {sorted(map(str, drawn[name]))}, first base {first}")
    assert not wrong, "the drawn exception tree is wrong:\n" + "\n".join(wrong)


def test_each_mcp_error_class_carries_its_code() -> None:
    from mcpsync._protocol import codes
    from mcpsync.exceptions import (
        MissingClientCapability, ResourceNotFound, SamplingRejected, UnsupportedProtocolVersion, URLElicitationRequired,
    )

    assert MissingClientCapability.CODE == codes.MISSING_CAPABILITY
    assert URLElicitationRequired.CODE == codes.URL_ELICITATION_REQUIRED
    assert ResourceNotFound.CODE == codes.RESOURCE_NOT_FOUND
    assert SamplingRejected().code == SamplingRejected.CODE == codes.USER_REJECTED
    assert UnsupportedProtocolVersion.CODE == codes.UNSUPPORTED_VERSION


def module_lengths() -> Dict[str, int]:
    return {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}


def test_report_module_lengths(capsys: pytest.CaptureFixture[str]) -> None:
    """Module length is reported, never asserted (run with ``-s`` to see it): the longest twenty."""
    lengths = module_lengths()
    longest = sorted(lengths.items(), key=lambda item: (-item[1], item[0]))[:20]
    with capsys.disabled():
        print("\nlongest modules (lines, reported not capped):")
        for name, n in longest:
            print(f"  {n:5d}  {name}")
        print(f"  {sum(lengths.values()):5d}  lines in {len(lengths)} modules")


def _units() -> Iterator[Tuple[str, str, int]]:
    """("class" or "function", dotted name, lines) of every class and function of the package;
    nested ones are named through their parents (``mod.Class.method``)."""
    for module, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))

        def visit(node: ast.AST, prefix: str) -> Iterator[Tuple[str, str, int]]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{prefix}.{child.name}"
                    kind = "class" if isinstance(child, ast.ClassDef) else "function"
                    yield kind, name, (child.end_lineno or child.lineno) - child.lineno + 1
                    yield from visit(child, name)

        yield from visit(tree, module)


def test_no_class_or_function_is_long() -> None:
    """A class over MAX_CLASS_LINES (400) or a function over MAX_FUNCTION_LINES (80) is flagged,
    unless listed (LONG_CLASSES, LONG_FUNCTIONS) and no longer than when it was listed."""
    problems = []
    seen = set()
    for kind, name, lines in _units():
        limit, listed = (MAX_CLASS_LINES, LONG_CLASSES) if kind == "class" else (MAX_FUNCTION_LINES, LONG_FUNCTIONS)
        if lines <= limit:
            continue
        seen.add(name)
        if name not in listed:
            problems.append(f"{kind} {name} is {lines} lines (limit {limit}): split it along its jobs")
        elif lines > listed[name]:
            problems.append(f"{kind} {name} grew to {lines} lines (listed at {listed[name]}): split it, do not grow it")
    stale = sorted((set(LONG_CLASSES) | set(LONG_FUNCTIONS)) - seen)
    assert not problems, "\n".join(problems)
    assert not stale, f"no longer over the limit (or gone): take them off the list: {stale}"


def radon_density() -> Tuple[int, int]:
    """(blocks radon rates C or worse, lines of source) over the package, as ``radon cc -nc`` counts."""
    from radon.complexity import cc_rank, cc_visit

    blocks = lines = 0
    for path in MODULES.values():
        source = path.read_text(encoding="utf-8")
        lines += len(source.splitlines())
        blocks += sum(1 for block in cc_visit(source) if cc_rank(block.complexity) >= "C")
    return blocks, lines


def test_branching_is_bounded() -> None:
    """radon's C-or-worse blocks per 1,000 lines: at most RADON_CEILING (a downward ratchet toward
    RADON_AIM, requests' 2.0). Reproduce with ``radon cc -nc mcpsync``."""
    pytest.importorskip("radon")
    blocks, lines = radon_density()
    density = blocks * 1000 / lines
    print(f"radon: {blocks} blocks at C or worse in {lines} lines: {density:.2f} per 1,000 (aim {RADON_AIM})")
    assert density <= RADON_CEILING, (
        f"{blocks} blocks rated C or worse in {lines} lines is {density:.2f} per 1,000 lines, over the "
        f"pinned {RADON_CEILING}: simplify the new branching (radon cc -nc -s mcpsync lists them)")
    assert density > RADON_CEILING - RADON_RATCHET_SLACK or RADON_CEILING <= RADON_AIM, (
        f"the figure fell to {density:.2f}: lower RADON_CEILING to {max(RADON_AIM, round(density + 0.05, 1))}")


@pytest.mark.parametrize("name", ["mcpsync", "mcpsync.config"])
def test_importing_loads_no_http_stack(name: str) -> None:
    """In a fresh interpreter: this one may have loaded requests already."""
    code = f"import sys, {name}; print(' '.join(m for m in {HTTP_STACK!r} if m in sys.modules))"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                         cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"import {name} loaded {out.stdout.strip()}"
