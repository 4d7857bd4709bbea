"""The ``mcpsync skills`` and ``mcpsync skill`` commands (the ``io.modelcontextprotocol/skills`` extension).

``skills [SERVER]`` lists the skills of every server that declares the extension (or of
the one named); ``skill SERVER NAME`` shows one skill's ``SKILL.md``, verified against its
entry. Runs on the command's thread; each call blocks until the server answers.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List, Optional, Tuple

from .._terminal import shown
from ..exceptions import CapabilityError, MCPSyncError
from . import _output as out

SKILL_COMMANDS = ("skills", "skill")


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("skills", parents=[common], help="list the skills of every server, or of one")
    sub.add_argument("server", nargs="?", metavar="SERVER", help="a server name or an http(s) URL")
    sub = commands.add_parser("skill", parents=[common], help="show one skill's SKILL.md, verified",
                              description="NAME is a skill's name or its SKILL.md URI; with '-- COMMAND...' "
                                          "leave SERVER out.")
    sub.add_argument("words", nargs="+", metavar="SERVER NAME")


def positionals(args: argparse.Namespace, target: List[str]) -> Tuple[Optional[str], Optional[str], Any]:
    """``(server, skill name, None)`` for ``skills [SERVER]`` and ``skill SERVER NAME``."""
    if args.command == "skills":
        if target and args.server:
            raise out.UsageError(f"give either a SERVER ({args.server!r}) or '-- COMMAND...', not both")
        return args.server, None, None
    words = list(args.words)
    if len(words) != (1 if target else 2):
        raise out.UsageError("skill needs NAME after the server (SERVER NAME, or NAME -- COMMAND...)")
    return (None if target else words[0]), words[-1], None


def run_skills(manager: Any, wanted: Optional[str], args: argparse.Namespace) -> int:
    """List skills (servers that do not declare the extension are skipped unless named) or show one."""
    if args.command == "skill":
        assert wanted is not None
        return _show_skill(manager, wanted, args)
    rows: List[Dict[str, Any]] = []
    for name in [wanted] if wanted is not None else manager.servers:
        rows.extend(_server_skills(manager, name, named=wanted is not None, timeout=args.timeout))
    if args.json:
        out.print_json(rows)
        return out.EXIT_OK
    out.print_table(("SERVER", "SKILL", "URI", "FILES", "DESCRIPTION"), [_skill_row(r) for r in rows])
    return out.EXIT_OK


def _show_skill(manager: Any, server: str, args: argparse.Namespace) -> int:
    """``skill SERVER NAME``: the skill's files and its text (verified when its server lets it be)."""
    loaded = manager.client(server, timeout=args.timeout).load_skill(args.words[-1], timeout=args.timeout)
    skill = loaded.skill
    if args.json:
        out.print_json({"server": server, "skill": skill.to_dict(), "verified": loaded.content.verified,
                        "text": loaded.text})
        return out.EXIT_OK
    state = "verified: size, digest and frontmatter" if loaded.content.verified else "NOT verified (dynamic)"
    out.line(f"{shown(skill.name)}  {shown(skill.uri)}  ({shown(server)}; {state})")
    for file in skill.files:
        out.line(f"  {shown(file.uri)}  {file.size} bytes")
    out.line()
    out.write(loaded.text if loaded.text.endswith("\n") else loaded.text + "\n")
    return out.EXIT_OK


def _server_skills(manager: Any, name: str, *, named: bool, timeout: float) -> List[Dict[str, Any]]:
    """One server's skills as rows. A server the user did not name is skipped when it offers none
    (and warned about when it fails); a named one raises."""
    try:
        client = manager.client(name, timeout=0)
        return [{"server": name, **skill.to_dict()} for skill in client.list_skills(timeout=timeout)]
    except CapabilityError:
        if named:
            raise
    except MCPSyncError as exc:
        if named:
            raise
        out.warn(out.first_line(exc))
    return []


def _skill_row(row: Dict[str, Any]) -> Tuple[str, ...]:
    frontmatter = row.get("frontmatter") or {}
    resources = row.get("resources")
    files = str(len(resources)) if isinstance(resources, list) else str(row.get("resources", "?"))
    return (row["server"], str(frontmatter.get("name", "")), str(row.get("uri", "")), files,
            out.first_line(frontmatter.get("description") or ""))
