"""A server that dies at start-up: the command says why (its last stderr lines), made safe to print.

The dying server is a real script (tests/servers/dies.py) run by the real command in a subprocess,
given as ``-- COMMAND``, as a config entry, and under ``servers --status``.
"""

from __future__ import annotations

from ..conftest import server_argv
from .test_cli import Shell, sh  # noqa: F401  (fixture)

FATAL = "FATAL: DATABASE_URL is not set"


def test_a_server_given_as_a_command_that_dies_shows_its_last_stderr_lines(sh: Shell) -> None:
    out = sh.run("tools", "--", *server_argv("dies.py"))
    assert out.returncode == 4, out.stderr
    assert "exited with code 3" in out.stderr
    assert FATAL in out.stderr and "starting up" in out.stderr
    assert out.stderr.count(FATAL) == 1, out.stderr  # said once, not once per layer


def test_a_config_entry_that_dies_shows_its_last_stderr_lines(sh: Shell) -> None:
    argv = server_argv("dies.py")
    config = sh.write_config({"db": {"command": argv[0], "args": argv[1:]}}, name="servers.json")
    out = sh.run("tools", "db", "--config", str(config))
    assert out.returncode == 4 and FATAL in out.stderr, out.stderr
    listing = sh.run("tools", "--config", str(config))  # every server: a warning, still with the reason
    assert FATAL in listing.stderr and "'db'" in listing.stderr, listing.stderr


def test_servers_status_shows_each_dead_servers_last_stderr_lines(sh: Shell) -> None:
    argv = server_argv("dies.py")
    demo = server_argv("misbehaving.py", "good")
    config = sh.write_config({"db": {"command": argv[0], "args": argv[1:]},
                              "fine": {"command": demo[0], "args": demo[1:]}}, name="servers.json")
    out = sh.run("servers", "--status", "--config", str(config))
    assert out.returncode == 4, out.stdout + out.stderr
    assert "connected" in out.stdout
    assert FATAL in out.stderr and "'db'" in out.stderr, out.stderr


def test_the_tail_is_a_few_lines_not_the_whole_log(sh: Shell) -> None:
    out = sh.run("tools", "--", *server_argv("dies.py", "chatty"))
    assert FATAL in out.stderr
    assert "loading plugin 0\n" not in out.stderr
    assert sum("loading plugin" in line for line in out.stderr.splitlines()) <= 4, out.stderr


def test_the_tail_is_made_safe_for_the_terminal(sh: Shell) -> None:
    out = sh.run("tools", "--", *server_argv("dies.py", "hostile"))
    assert out.returncode == 4
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr and "\u202e" not in out.stderr, repr(out.stderr)
    assert "\\x1b]0;owned\\x07" in out.stderr and "\\u202e" in out.stderr  # shown, visibly


def test_debug_shows_the_lines_once_in_the_traceback_and_keeps_the_exit_code(sh: Shell) -> None:
    out = sh.run("--debug", "tools", "--", *server_argv("dies.py"))
    assert out.returncode == 4 and FATAL in out.stderr, out.stderr
