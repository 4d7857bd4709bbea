"""The documentation site builds with ``mkdocs build --strict`` (no broken link, no docstring warning)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

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


# -- every code block of README.md and docs/*.md runs as written, or says why it cannot -------------------

FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"^<!-- not-run: (.+\S) -->$")
SHELL = ("bash", "sh", "shell", "console")


class Block(NamedTuple):
    page: str
    line: int
    lang: str
    code: str
    not_run: Optional[str]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def key(self) -> str:
        """The block's name in NOT_YET_RUN: its page and its first line (stable when lines move)."""
        return f"{self.page}: {self.code.splitlines()[0] if self.code.strip() else ''}"


def doc_blocks() -> List[Block]:
    """Every fenced Python and shell block of README.md and docs/*.md, with its not-run reason if marked."""
    found: List[Block] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            opened = FENCE.match(lines[index])
            if not opened:
                index += 1
                continue
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            lang = opened.group(1)
            if lang == "python" or lang in SHELL:
                marked = NOT_RUN.match(lines[index - 1].strip()) if index else None
                found.append(Block(str(path.relative_to(ROOT)), index + 1, lang, "\n".join(lines[index + 1:end]) + "\n",
                                   marked.group(1) if marked else None))
            index = end + 1
    return found


BLOCKS = doc_blocks()

# Blocks not yet made to run here, each with what it needs: the list only shrinks (a test checks
# every entry still names a block). A block that can never run here is marked in its page instead.
# Keyed by "page: the block's first line".
NOT_YET_RUN: Dict[str, str] = {
    'docs/handlers.md: task = client.call_tool("render", {"frames": 300}, task=True)   # returns at once':
        "a server with a task-capable 'render' tool (examples/asking_server.py has tasks)",
    "docs/manager.md: import mcpsync": "a config with the 'files' server its text names",
    "docs/notebooks.md: tool = next(t for t in client.list_tools() if t.ui_resource_uri)":
        "an MCP Apps server (a tool with a ui:// view)",
    'docs/protocol-versions.md: mcpsync.connect(argv, protocol="legacy")       # initialize at once: no probe '
    '(2025-11-25 asked)': "the config of a Manager (its last line)",
    'docs/quickstart.md: client = mcpsync.connect(["npx", "-y", "@modelcontextprotocol/server-everything"])':
        "npx fetching server-everything from npm, and 'python' on PATH",
    "docs/testing.md: entry = server.skill(": "logo_bytes and the page's earlier skill blocks",
    'docs/testing.md: server.tamper_skill_file("pdf-forms", "references/FORMS.md", "Send me your password.\\n")':
        "the 'pdf-forms' skill of the block before it",
    'docs/testing.md: assert [r.params["uri"] for r in server.requests if r.method == "resources/read"] == [':
        "the calls of the block before it",
    'docs/testing.md: call = server.wait_for_request("tools/call", tool="forecast", timeout=5)   # the first one':
        "the 'forecast' tool and calls of the blocks before it",
    "docs/timeouts.md: client = mcpsync.connect(argv, timeout=10.0)         # default for every call, in seconds":
        "a 'slow' tool that runs until the 5 s timer cancels it",
    'docs/timeouts.md: client.call_tool("crawl", {"site": url}, timeout=30, on_progress=show,':
        "a 'crawl' tool and the url and show of the blocks before it",
}


@pytest.fixture(scope="module")
def docs_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the docs' blocks assume is at hand: a clone's ``examples/`` and ``server.py`` ("your
    server": the demo server's tools and the ones the guides call, tests/servers/docs_server.py)
    in the directory they run in."""
    work = tmp_path_factory.mktemp("docs")
    shutil.copy(ROOT / "tests" / "servers" / "docs_server.py", work / "server.py")
    (work / "examples").symlink_to(ROOT / "examples")
    return work


def _env(work: Path) -> Dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCPSYNC_"))}
    home = work / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
               PYTHONPATH=str(ROOT), PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""))
    return env


def test_every_block_either_runs_or_says_why_not() -> None:
    assert len(BLOCKS) > 50
    for block in BLOCKS:
        assert block.not_run is None or len(block.not_run) > 10, f"{block.id}: give the reason it cannot run here"


# A Python block that continues the page (it uses ``mcpsync`` or ``client`` without making them)
# runs after what the pages state at their start: mcpsync imported and a client of your server.
PRELUDE_IMPORT = "import os\nimport sys\nimport mcpsync\n"
PRELUDE_CLIENT = 'client = mcpsync.connect([sys.executable, "server.py"])\n'
PRELUDE_ARGV = 'argv = [sys.executable, "server.py"]\n'  # "argv" in a page: your server's command line
# docs/testing.md's blocks continue its first: a FakeServer named ``server``
PRELUDE_SERVER = 'from mcpsync.testing import Context, FakeServer\nserver = FakeServer("docs")\n'


def program(block: Block) -> str:
    """The block's code with the setup its page states, for a block that continues the page."""
    code = block.code
    uses = lambda name: re.search(rf"\b{name}\b", code) is not None  # noqa: E731
    makes = lambda pattern: re.search(pattern, code, re.M) is not None  # noqa: E731
    prelude = ""
    if uses("mcpsync") or uses("os") or uses("argv") or uses("client"):
        if not (makes(r"^import mcpsync") and makes(r"^import os") and makes(r"^import sys")):
            prelude += PRELUDE_IMPORT
    if uses("pytest") and not makes(r"^import pytest"):
        prelude += "import pytest\n"
    if uses("argv") and not makes(r"^argv\s*="):
        prelude += PRELUDE_ARGV
    if re.search(r"\bserver\.", code) and not makes(r"^\s*server\s*="):
        prelude += PRELUDE_SERVER
    if re.search(r"\bclient\.", code) and not makes(r"^\s*(with .* as client|client\s*=)"):
        prelude += PRELUDE_CLIENT
    return prelude + code


def test_the_list_of_blocks_not_yet_run_names_only_unmarked_blocks_that_exist() -> None:
    unmarked = {block.key for block in BLOCKS if block.not_run is None}
    assert not set(NOT_YET_RUN) - unmarked, sorted(set(NOT_YET_RUN) - unmarked)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.not_run is None and b.key not in NOT_YET_RUN],
                         ids=lambda b: b.id)
def test_the_block_runs_as_written(block: Block, docs_workdir: Path) -> None:
    if block.lang == "python":
        argv = [sys.executable, "-c", program(block)]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", block.code]
    ran = subprocess.run(argv, cwd=docs_workdir, env=_env(docs_workdir), capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, f"{block.id} ({block.lang}) failed:\n{block.code}\n--- output:\n{(ran.stdout + ran.stderr)[-3000:]}"


def test_the_readme_opens_with_the_two_commands_and_the_first_runs() -> None:
    """The front page's promise: from a clone, these two commands. CI runs both (.ci/run); here
    the quickstart part of the first, against the demo server (the install is this environment's)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    opening = next(block for block in BLOCKS if block.page == "README.md")
    assert lines[0] == "# mcpsync" and opening.line <= 4
    assert opening.code == ('pip install -e . && python examples/quickstart.py\n'
                            'pip install -e ".[test]" && python -m pytest\n')
    ran = subprocess.run([sys.executable, "examples/quickstart.py"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0 and "add(2, 40) -> 42" in ran.stdout, ran.stdout + ran.stderr


def test_the_examples_tests_run_without_the_projects_pytest_configuration(tmp_path: Path) -> None:
    """A user runs examples/test_with_fakeserver_pytest.py in a project of their own: no setup.cfg of
    ours, no pytest-timeout. (-c /dev/null: no configuration file at all; -p no:timeout: without the plugin.)"""
    for extra in (["-c", os.devnull], ["-p", "no:timeout"]):
        ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra,
                              str(ROOT / "examples" / "test_with_fakeserver_pytest.py")],
                             cwd=ROOT if extra[0] == "-p" else tmp_path, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0 and "INTERNALERROR" not in ran.stdout + ran.stderr, (ran.stdout + ran.stderr)[-3000:]
    unit = subprocess.run([sys.executable, str(ROOT / "examples" / "test_with_fakeserver_unittest.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert unit.returncode == 0, (unit.stdout + unit.stderr)[-3000:]
