"""The documentation site builds with ``mkdocs build --strict`` (no broken link, no docstring warning)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
                    reason="mkdocs and mkdocstrings are not installed (pip install -e '.[docs]')")
def test_the_docs_build_strictly(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, (built.stdout + built.stderr)[-5000:]
    assert (tmp_path / "site" / "testing" / "index.html").is_file()
    reference = (tmp_path / "site" / "reference" / "testing" / "index.html").read_text(encoding="utf-8")
    assert "mcpsync.testing.FakeServer" in reference  # the API reference came from the docstrings
