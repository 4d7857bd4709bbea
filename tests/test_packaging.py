"""The package as published: its declared dependencies are real, and its wheel holds what it should."""

from __future__ import annotations

import ast
import configparser
import importlib.util
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List, Set

import pytest

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


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once per session from a copy of the tree (no stale build/ of the checkout)."""
    if importlib.util.find_spec("build") is None or importlib.util.find_spec("wheel") is None:
        pytest.skip("build and wheel are not installed (pip install -e '.[test]')")
    work = tmp_path_factory.mktemp("package")
    source = work / "src"
    shutil.copytree(ROOT / "mcpsync", source / "mcpsync", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.cfg", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(work / "dist"), str(source)],
                           capture_output=True, text=True, timeout=180)
    assert built.returncode == 0, (built.stdout + built.stderr)[-4000:]
    (found,) = (work / "dist").glob("mcpsync-*.whl")
    return found


def test_the_wheel_holds_the_package_its_types_and_license_and_nothing_of_the_tests(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "mcpsync/py.typed" in names
    assert "mcpsync/__init__.py" in names and "mcpsync/testing/__init__.py" in names
    assert any(n.endswith(".dist-info/LICENSE") or "/licenses/LICENSE" in n for n in names), names
    strays = [n for n in names if not (n.startswith("mcpsync/") or ".dist-info/" in n)]
    assert not strays, f"the wheel holds files outside the package: {strays}"
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/") or n.endswith(".pyc")]


def test_the_wheel_metadata_is_ready_to_publish(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode("utf-8")
    from mcpsync._version import __version__

    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), f"not a release version: {__version__}"
    assert f"\nVersion: {__version__}\n" in metadata
    classifiers = set(re.findall(r"^Classifier: (.+)$", metadata, flags=re.M))
    for minor in range(9, 14):  # every Python version the project is tested on
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert "Typing :: Typed" in classifiers
    assert "Requires-Python: >=3.9" in metadata
    assert re.findall(r"^Requires-Dist: ([^;\n]+)$", metadata, flags=re.M) == ["requests>=2.28"]
    assert "Description-Content-Type: text/markdown" in metadata


@pytest.mark.skipif(importlib.util.find_spec("twine") is None, reason="twine is not installed (pip install -e '.[test]')")
def test_twine_accepts_the_wheel(wheel: Path) -> None:
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel)],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
