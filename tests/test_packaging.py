"""The package as published: its declared dependencies are real, and its wheel holds what it should."""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path
from typing import List, Set

from .conftest import ROOT

# distribution name (normalised) -> the module it is imported as, where the two differ
IMPORT_NAMES = {"pyjwt": "jwt", "typing-extensions": "typing_extensions", "sseclient-py": "sseclient"}


def _requirements(value: str) -> List[str]:
    names = []
    for line in value.strip().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def _imported_top_modules() -> Set[str]:
    found: Set[str] = set()
    for path in (ROOT / "mcpsync").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_every_declared_dependency_is_imported_by_the_package() -> None:
    """A dependency nothing imports costs every user an install and names a parser we do not use."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    required = _requirements(config["options"]["install_requires"])
    assert required, "setup.cfg declares no install_requires"
    imported = _imported_top_modules()
    unused = [name for name in required if IMPORT_NAMES.get(name, name.replace("-", "_")) not in imported]
    assert not unused, f"install_requires names packages mcpsync never imports: {unused}"
