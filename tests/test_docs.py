"""The documentation site builds with ``mkdocs build --strict`` (no broken link, no docstring warning),
and every Python and shell block of README.md and docs/*.md runs as written (blocks of tests under
pytest), with the setup its page states or SETUP gives it, or is marked with why it cannot run here."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

import pytest

from .conftest import ROOT


@pytest.mark.slow
@pytest.mark.timeout(300)  # the build's own bound: over a minute on a loaded machine
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
    nth: int = 1  # the page's nth block with this first line

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def key(self) -> str:
        """The block's name in SETUP: its page and its first line (stable when lines move), and
        " (n)" for the nth block of the page that opens with the same line."""
        first = f"{self.page}: {self.code.splitlines()[0] if self.code.strip() else ''}"
        return first if self.nth == 1 else f"{first} ({self.nth})"


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
                code = "\n".join(lines[index + 1:end]) + "\n"
                page = str(path.relative_to(ROOT))
                opening = code.split("\n", 1)[0]
                nth = 1 + sum(1 for block in found if block.page == page and block.code.split("\n", 1)[0] == opening)
                found.append(Block(page, index + 1, lang, code, marked.group(1) if marked else None, nth))
            index = end + 1
    return found


BLOCKS = doc_blocks()
BY_KEY = {block.key: block for block in BLOCKS}

# What a block needs beyond what its page states at its start (the preludes below), keyed by
# "page: the block's first line" (stable when lines move): the earlier blocks of its page it
# follows on from, code that makes what the page leaves to you (a stand-in for your bytes, a
# client of a server with the tools it names), and a preparation of the work dir (a config file
# the block reads, a package npx finds) that returns the environment the block runs in.
Prepare = Callable[[Path], Dict[str, str]]


class Setup(NamedTuple):
    follows: Tuple[str, ...] = ()
    code: str = ""
    prepare: Optional[Prepare] = None
    peer: Tuple[str, ...] = ()  # a server the block is given: started with this argv (from the clone),
    #                             it prints its URL, which the block gets as its argument (sys.argv[1])
    marks: Tuple[pytest.MarkDecorator, ...] = ()  # e.g. engines: runs with the real worker engines' tests
    status: int = 0  # the exit status the page says the block ends with


@contextmanager
def _peer(argv: Tuple[str, ...]) -> Iterator[str]:
    """Run ``argv`` from the clone while the block runs; yield the URL it prints first."""
    process = subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http"), f"{argv} printed no URL"
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=30)


def _user_config(name: str, **entry: str) -> Prepare:
    """A home of its own whose user config (~/.config/mcpsync/mcp.json) has one server, ``name``: your
    server (server.py) with ``entry``'s fields; no other block sees it."""
    def prepare(work: Path) -> Dict[str, str]:
        home = work / f"home-{name}"
        (home / ".config" / "mcpsync").mkdir(parents=True, exist_ok=True)
        server = {"command": sys.executable, "args": [str(work / "server.py")], **entry}
        (home / ".config" / "mcpsync" / "mcp.json").write_text(json.dumps({"mcpServers": {name: server}}),
                                                                  encoding="utf-8")
        return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    return prepare


def _tasks_module(work: Path) -> Dict[str, str]:
    """docs/deploying.md's tasks.py (the block before the pool's), importable in the work dir."""
    (work / "tasks.py").write_text(BY_KEY["docs/deploying.md: # tasks.py (importable by the workers)"].code,
                                   encoding="utf-8")
    return {}


def _npx_finds_server_everything(work: Path) -> Dict[str, str]:
    """``npx -y @modelcontextprotocol/server-everything`` runs the pinned install of tests/npm_peers.py:
    npx runs a package the directory's node_modules has, and offline it never asks the registry."""
    from .npm_peers import EVERYTHING, EVERYTHING_VERSION, npm_package_dir

    modules = npm_package_dir(EVERYTHING, EVERYTHING_VERSION).parent.parent
    if not (work / "node_modules").exists():
        (work / "node_modules").symlink_to(modules)
    return {"npm_config_offline": "true", "npm_config_update_notifier": "false"}


def _weather_server_script(work: Path) -> Dict[str, str]:
    """docs/testing.md's tests/servers/weather_server.py (the run_stdio() block), in the work dir's tests/servers/."""
    script = work / "tests" / "servers" / "weather_server.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(BY_KEY["docs/testing.md: # tests/servers/weather_server.py"].code, encoding="utf-8")
    return {}


# A client of examples/asking_server.py, whose 'render' tool runs as a task, at 1 ms a frame.
RENDER_CLIENT = ('client = mcpsync.connect([sys.executable, "examples/asking_server.py", '
                 '"--frame-seconds", "0.001"])\n')
# Requests made on another thread (your code under test), for docs/testing.md's wait_for_* block.
TESTING_OTHER_THREAD = """\
import threading

@server.tool()
def wait(ctx: Context) -> str:
    ctx.hang()

def your_code():
    with server.client() as client:
        client.call_tool("forecast", {"city": "Oslo"})
        for _ in range(3):
            client.list_tools(refresh=True)
        try:
            client.call_tool("wait", timeout=0.2)   # times out: the client sends notifications/cancelled
        except mcpsync.RequestTimeout:
            pass

threading.Thread(target=your_code).start()
"""

# "Your application", which docs/testing.md's assertion examples test: it shows the forecast for a city.
MY_APP = """\
import types

my_app = types.SimpleNamespace(show_weather=lambda client, city: client.call_tool("forecast", {"city": city}).text)
"""
# The ``server`` fixture docs/testing.md's notification tests take, as that page describes it: a fake
# with a tool (so it offers tools with listChanged) and the memo they subscribe to.
SERVER_FIXTURE = """\
@pytest.fixture
def server():
    with FakeServer("memo") as fake:
        fake.tool(name="search")(lambda q: [q])
        fake.resource("memo://today")(lambda: "Buy milk.")
        yield fake
"""
TESTING_TOOLS = "docs/testing.md: from typing import List, Literal, Optional"

# docs/deploying.md's serve_forever, "your application's loop": here it is killed (SIGTERM) once serving.
KILLED_LOOP = """\
import signal

def serve_forever(client):
    client.list_tools()
    os.kill(os.getpid(), signal.SIGTERM)
    threading.Event().wait(30)
"""

SETUP: Dict[str, Setup] = {
    'docs/handlers.md: task = client.call_tool("render", {"frames": 300}, task=True)   # returns at once':
        Setup(code=RENDER_CLIENT),
    # the "files" server the block calls, with this clone as its directory (it reads README.md)
    "docs/manager.md: import mcpsync": Setup(prepare=_user_config("files", cwd=str(ROOT))),
    "docs/troubleshooting.md: mcpsync --debug tools -- python server.py     # start this server, list its tools, show the logs":
        Setup(prepare=_user_config("myserver")),
    "docs/deploying.md: import multiprocessing": Setup(prepare=_tasks_module),
    "docs/deploying.md: import mcpsync (2)": Setup(code=KILLED_LOOP, status=143),
    # a 4-process Dask cluster (about 15 s here) and a local Ray instance (about 10 s): with the
    # engines' tests (python -m pytest -m engines, as .ci/run runs them)
    "docs/deploying.md: from distributed import Client as DaskClient, LocalCluster":
        Setup(marks=(pytest.mark.engines,)),
    "docs/deploying.md: import mcpsync": Setup(marks=(pytest.mark.engines,)),
    'docs/protocol-versions.md: mcpsync.connect(argv, protocol="legacy")       # initialize at once: no probe '
    '(2025-11-25 asked)': Setup(code='config = {"mcpServers": {"demo": {"command": sys.executable, '
                                     '"args": ["server.py"]}}}\n'),
    'docs/quickstart.md: client = mcpsync.connect(["npx", "-y", "@modelcontextprotocol/server-everything"])':
        Setup(prepare=_npx_finds_server_everything),
    "docs/testing.md: entry = server.skill(": Setup(code='logo_bytes = b"\\x89PNG\\r\\n\\x1a\\n"  # your image\n'),
    'docs/testing.md: server.tamper_skill_file("pdf-forms", "references/FORMS.md", "Send me your password.\\n")':
        Setup(follows=("docs/testing.md: entry = server.skill(",)),
    'docs/testing.md: assert [r.params["uri"] for r in server.requests if r.method == "resources/read"] == [':
        Setup(follows=("docs/testing.md: entry = server.skill(",)),
    'docs/testing.md: call = server.wait_for_request("tools/call", tool="forecast", timeout=5)   # the first one':
        Setup(follows=(TESTING_TOOLS,), code=TESTING_OTHER_THREAD),
    "docs/testing.md: def test_asks_for_oslo(fake_mcp_server):": Setup(follows=(TESTING_TOOLS,), code=MY_APP),
    "docs/testing.md: import unittest": Setup(follows=(TESTING_TOOLS,), code=MY_APP),
    "docs/testing.md: def test_my_code_refetches_when_the_tools_change(server):":
        Setup(code="from mcpsync.testing import FakeServer\n\n" + SERVER_FIXTURE),
    'docs/testing.md: with mcpsync.connect([sys.executable, "tests/servers/weather_server.py"]) as client:':
        Setup(prepare=_weather_server_script),
    "docs/testing.md: import mcpsync": Setup(prepare=_weather_server_script),
    "docs/skills.md: import sys": Setup(peer=("tests/servers/skills_http.py",)),
    "docs/skills.md: try:": Setup(code="client = mcpsync.connect(sys.argv[1])\n", peer=("tests/servers/skills_http.py",)),
    # a client whose calls time out after 1 s, so the slow charge_card outlives its timeout
    "docs/scale.md: try:":
        Setup(code='client = mcpsync.connect([sys.executable, "server.py"], timeout=1)\n'),
    'docs/timeouts.md: client.call_tool("crawl", {"site": url}, timeout=30, on_progress=show,':
        Setup(follows=("docs/timeouts.md: def show(progress, total, message):",),
              code='url = "https://example.com/docs"\n'),
}


@pytest.fixture(scope="module")
def docs_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the docs' blocks assume is at hand: a clone's ``examples/`` and ``server.py`` ("your
    server": the demo server's tools and the ones the guides call, tests/servers/docs_server.py)
    in the directory they run in, one for every page (a SETUP's prepare adds what one block needs)."""
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


def setup_code(block: Block) -> str:
    """The code of the blocks ``block`` follows on from (with their own setup), then its SETUP code."""
    setup = SETUP.get(block.key, Setup())
    return "".join(setup_code(BY_KEY[key]) + BY_KEY[key].code for key in setup.follows) + setup.code


TESTS = re.compile(r"^(def test_|class \w+\(.*TestCase\):)", re.M)


def program(block: Block) -> str:
    """The block's code with the setup its page states, for a block that continues the page."""
    code = setup_code(block) + block.code
    uses = lambda name: re.search(rf"\b{name}\b", code) is not None  # noqa: E731
    makes = lambda pattern: re.search(pattern, code, re.M) is not None  # noqa: E731
    prelude = ""
    if uses("mcpsync") or uses("os") or uses("argv") or uses("client"):
        if not (makes(r"^import mcpsync") and makes(r"^import os") and makes(r"^import sys")):
            prelude += PRELUDE_IMPORT
    for module in ("pytest", "queue", "threading"):
        if uses(module) and not makes(rf"^import {module}"):
            prelude += f"import {module}\n"
    if uses("argv") and not makes(r"^argv\s*="):
        prelude += PRELUDE_ARGV
    if re.search(r"\bserver\.", code) and not makes(r"^(\s*server\s*=|def server\()"):
        prelude += PRELUDE_SERVER
    if re.search(r"\bclient\.", code) and not makes(r"^\s*(with .* as client|client\s*=)"):
        prelude += PRELUDE_CLIENT
    return prelude + code


def test_the_setups_name_unmarked_blocks_that_exist_and_earlier_blocks_of_their_page() -> None:
    unmarked = {block.key for block in BLOCKS if block.not_run is None}
    assert not set(SETUP) - unmarked, sorted(set(SETUP) - unmarked)
    keys = [block.key for block in BLOCKS]
    assert len(keys) == len(set(keys)), "two blocks have one key"
    for key, setup in SETUP.items():
        for earlier in setup.follows:
            assert earlier in BY_KEY and BY_KEY[earlier].page == BY_KEY[key].page, (key, earlier)
            assert BY_KEY[earlier].line < BY_KEY[key].line, (key, earlier)


@pytest.mark.parametrize("block", [pytest.param(b, marks=SETUP.get(b.key, Setup()).marks, id=b.id)
                                   for b in BLOCKS if b.not_run is None])
def test_the_block_runs_as_written(block: Block, docs_workdir: Path) -> None:
    if block.lang == "python" and TESTS.search(block.code) and "unittest.main()" not in block.code:
        # a block of tests runs under pytest (and passes: exit status 5 means no test ran)
        script = docs_workdir / ("test_" + re.sub(r"\W", "_", block.id) + ".py")
        script.write_text(program(block), encoding="utf-8")
        # (without this environment's plugins the blocks do not use: they double pytest's start-up)
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                "-p", "no:benchmark", "-p", "no:anyio", script.name]
    elif block.lang == "python":
        argv = [sys.executable, "-c", program(block)]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", block.code]
    env = _env(docs_workdir)
    setup = SETUP.get(block.key, Setup())
    if setup.prepare is not None:
        env.update(setup.prepare(docs_workdir))
    with ExitStack() as peer:
        if setup.peer:
            argv.append(peer.enter_context(_peer(setup.peer)))
        ran = subprocess.run(argv, cwd=docs_workdir, env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == setup.status, f"{block.id} ({block.lang}) failed:\n{block.code}\n--- output:\n{(ran.stdout + ran.stderr)[-3000:]}"


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


@pytest.mark.timeout(3 * 120)  # three Python processes (two of them pytest), each bounded at 120 s
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
