"""docs/architecture.md is written from the code: the call path it walks names modules and functions
that exist, in the order a call meets them, and every layer it lists is in the import contract."""

from __future__ import annotations

import importlib
import re
from typing import List, Tuple

from .conftest import ROOT

DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def call_path_steps() -> List[Tuple[str, str]]:
    """(module, dotted function) of every "`mcpsync/x.py` `Name.attr`" pair in the call path section."""
    section = DOC.split("## One call, end to end", 1)[1].split("\n## ", 1)[0]
    pairs = re.findall(r"`(mcpsync/[\w/]+\.py)` `([\w.]+)`", section)
    return [(path[:-3].replace("/", "."), name) for path, name in pairs]


def test_the_call_path_names_functions_that_exist() -> None:
    steps = call_path_steps()
    assert len(steps) >= 10, steps  # the walk is there, whole
    missing = []
    for module_name, dotted in steps:
        target: object = importlib.import_module(module_name)
        for part in dotted.split("."):
            target = getattr(target, part, None)
            if target is None:
                missing.append(f"{module_name}.{dotted}")
                break
    assert not missing, f"docs/architecture.md's call path names what the code no longer has: {missing}"


def test_the_call_path_starts_at_the_client_and_ends_in_the_tools_room() -> None:
    steps = call_path_steps()
    assert steps[0] == ("mcpsync.client", "Client.call_tool")
    assert ("mcpsync._features.tools", "call_tool") in steps
    assert steps[-2:] == [("mcpsync._features.tools", "tool_result"), ("mcpsync._features.spill", "cut")]
    reader = steps.index(("mcpsync.transports.stdio", "_read_stdout"))
    assert steps[reader + 1] == ("mcpsync._rpc.engine", "Engine.receive")


def test_every_layer_of_the_contract_is_in_the_table() -> None:
    config = (ROOT / "setup.cfg").read_text(encoding="utf-8")
    layers = config.split("[importlinter:contract:layers]", 1)[1].split("layers =", 1)[1].split("\n[", 1)[0]
    names = {name.strip() for line in layers.splitlines() if line.strip() and not line.strip().startswith("#")
             for name in line.split("|")}
    table = DOC.split("## The layers", 1)[1].split("\n## ", 1)[0]
    absent = sorted(name for name in names if not re.search(r"`%s(\.py|/)`" % re.escape(name), table))
    assert not absent, f"layers of setup.cfg that docs/architecture.md's table leaves out: {absent}"
