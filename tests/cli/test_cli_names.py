"""``-- COMMAND`` names the server itself: the name is always a valid one, whatever the command is."""

from __future__ import annotations

import shutil
import sys

import pytest

from mcpsync import config as mcpconfig
from mcpsync.transports.stdio import default_name

from ..conftest import ROOT
from .test_cli import Shell, sh  # noqa: F401  (fixture)

DEMO = ROOT / "examples" / "demo_server.py"


@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_a_script_in_an_odd_directory_with_an_odd_name_is_listed(sh: Shell, debug: list) -> None:
    odd = sh.project / "odd dir (v2)"
    odd.mkdir()
    shutil.copy(DEMO, odd / "server#1.py")
    out = sh.run(*debug, "tools", "--", sys.executable, "odd dir (v2)/server#1.py")
    assert out.returncode == 0, out.stderr
    assert "invalid server name" not in out.stderr
    assert "add" in out.stdout and "server_1" in out.stdout


@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_inline_code_is_named_after_the_interpreter_not_the_code(sh: Shell, debug: list) -> None:
    code = f"import runpy; runpy.run_path({str(DEMO)!r}, run_name='__main__')"
    out = sh.run(*debug, "tools", "--json", "--", sys.executable, "-c", code)
    assert out.returncode == 0, out.stderr
    assert "invalid server name" not in out.stderr


def test_a_dying_server_with_an_odd_name_keeps_the_documented_exit_code_with_debug(sh: Shell) -> None:
    dies = sh.project / "odd dir (v2)"
    dies.mkdir()
    shutil.copy(ROOT / "tests" / "servers" / "dies.py", dies / "server#1.py")
    plain = sh.run("tools", "--", sys.executable, "odd dir (v2)/server#1.py")
    debug = sh.run("--debug", "tools", "--", sys.executable, "odd dir (v2)/server#1.py")
    assert plain.returncode == debug.returncode == 4, plain.stderr + debug.stderr  # 4: could not start
    assert "DATABASE_URL" in plain.stderr and "DATABASE_URL" in debug.stderr


@pytest.mark.parametrize("text, name", [
    ("server", "server"), ("server#1", "server_1"), ("odd dir (v2)", "odd dir _v2_"),
    ("  padded  ", "padded"), ("", "server"), ("   ", "server"), ("\u00e9t\u00e9", "\u00e9t\u00e9"),
    ("x" * 300, "x" * 100), ("a\x1b[2Jb", "a__2Jb"),
])
def test_valid_name_makes_any_text_a_name_the_config_accepts(text: str, name: str) -> None:
    assert mcpconfig.valid_name(text) == name
    mcpconfig.parse_server(mcpconfig.valid_name(text), {"command": "x"})  # accepted


@pytest.mark.parametrize("argv, name", [
    (["python", "server.py"], "server"), (["python", "-m", "pkg.server"], "server"),
    (["python", "-c", "import x; run('a/b.py')"], "python"), (["node", "-e", "code()"], "node"),
    (["python", "-X", "dev", "srv.py"], "srv"), (["uvx", "some-server"], "some-server"),
])
def test_default_name_skips_inline_code_and_option_values(argv: list, name: str) -> None:
    assert default_name(argv[0], argv[1:]) == name
