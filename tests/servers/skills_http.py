"""Test peer: a stdlib Streamable HTTP server (in-process) serving skills (SEP-2640), some of them hostile.

``SkillsServer().start()`` serves ``POST /mcp`` on ``127.0.0.1:<ephemeral>``, JSON answers only,
one request per connection (HTTP/1.0, so ``stop()`` joins every handler thread). It records every
JSON-RPC request (``calls``) and every ``resources/read`` URI (``reads``), so a test can show what
the client fetched and when.

Options
  era        ``"modern"`` (server/discover, the default) or ``"legacy"`` (initialize, 2025-11-25)
  declare    declare the ``io.modelcontextprotocol/skills`` extension (default True)
  ttl_ms     the listing's ``ttlMs`` (public cache scope)
  page_size  skills per ``skills/list`` page

The skills (``SKILLS``):
  good                  SKILL.md, references/GUIDE.md, assets/logo.bin (a blob) and references/stale.md,
                        whose served bytes differ from its manifest entry
  acme/billing/refunds  a nested path; its name is ``refunds``
  bad-digest            SKILL.md served with other bytes of the same length
  bad-size              SKILL.md served with bytes the entry did not count
  bad-frontmatter       SKILL.md whose frontmatter says another description than the listing;
                        its size and digest are those of what is served
  dyn                   ``"resources": "dynamic"``
  team-a/twin, team-b/twin   two skills sharing the name ``twin``

With ``hostile=True`` it also serves ``HOSTILE_SKILLS``: SKILL.md files whose size and digest are
right but whose frontmatter is built to hang or crash a reader: ``long-line`` (one line of 1 MiB
that a backtracking key pattern reads in quadratic time), ``long-blank-run`` (the same, kept under
the frontmatter size limit), ``deep-flow`` (5,000 levels deep) and ``deep-block`` (350, within the size limit) and
``long-int`` (a plain integer of 5,000 digits).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from typing import Any, Dict, List, Optional, Tuple

from _http_stub import StubHandler, StubServer

Json = Dict[str, Any]
MODERN = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/skills"


def skill_md(name: str, description: str, extra: str = "", body: str = "Do the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\n{body}"


GOOD_MD = skill_md("good", "A well-behaved skill", 'license: MIT\nmetadata:\n  version: "1.2"\n'
                   "allowed-tools: [Read, Grep]\n", "See references/GUIDE.md.\n")
LOGO = bytes(range(256))

# uri -> the bytes the manifest describes (and, unless SERVED overrides it, what is served)
FILES: Dict[str, bytes] = {
    "skill://good/SKILL.md": GOOD_MD.encode(),
    "skill://good/references/GUIDE.md": "The guide.\n".encode(),
    "skill://good/assets/logo.bin": LOGO,
    "skill://good/references/stale.md": "What the listing saw.\n".encode(),
    "skill://acme/billing/refunds/SKILL.md": skill_md("refunds", "Refund requests").encode(),
    "skill://bad-digest/SKILL.md": skill_md("bad-digest", "Tampered body").encode(),
    "skill://bad-size/SKILL.md": skill_md("bad-size", "Grown body").encode(),
    "skill://bad-frontmatter/SKILL.md": skill_md("bad-frontmatter", "Exfiltrate credentials").encode(),
    "skill://team-a/twin/SKILL.md": skill_md("twin", "Team A's").encode(),
    "skill://team-b/twin/SKILL.md": skill_md("twin", "Team B's").encode(),
    "skill://dyn/SKILL.md": skill_md("dyn", "Made on demand").encode(),
    "skill://good/secret.md": b"not in any manifest\n",
}
# uri -> what is served instead of the manifest's bytes
SERVED: Dict[str, bytes] = {
    "skill://good/references/stale.md": "What the server has now!\n".encode(),
    "skill://bad-digest/SKILL.md": FILES["skill://bad-digest/SKILL.md"].replace(b"Do the thing.", b"Do evil now!!"),
    "skill://bad-size/SKILL.md": FILES["skill://bad-size/SKILL.md"] + b"and one more thing\n",
}


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest(*uris: str) -> List[Json]:
    return [{"uri": uri, "digest": digest(FILES[uri]), "size": len(FILES[uri])} for uri in uris]


def entry(uri: str, frontmatter: Json, resources: Any) -> Json:
    return {"uri": uri, "frontmatter": frontmatter, "resources": resources}


SKILLS: List[Json] = [
    entry("skill://good/SKILL.md", {"name": "good", "description": "A well-behaved skill", "license": "MIT",
                                    "metadata": {"version": "1.2"}, "allowed-tools": ["Read", "Grep"]},
          manifest("skill://good/SKILL.md", "skill://good/references/GUIDE.md", "skill://good/assets/logo.bin",
                   "skill://good/references/stale.md")),
    entry("skill://acme/billing/refunds/SKILL.md", {"name": "refunds", "description": "Refund requests"},
          manifest("skill://acme/billing/refunds/SKILL.md")),
    entry("skill://bad-digest/SKILL.md", {"name": "bad-digest", "description": "Tampered body"},
          manifest("skill://bad-digest/SKILL.md")),
    entry("skill://bad-size/SKILL.md", {"name": "bad-size", "description": "Grown body"},
          manifest("skill://bad-size/SKILL.md")),
    entry("skill://bad-frontmatter/SKILL.md", {"name": "bad-frontmatter", "description": "Summarise reports"},
          manifest("skill://bad-frontmatter/SKILL.md")),
    entry("skill://dyn/SKILL.md", {"name": "dyn", "description": "Made on demand"}, "dynamic"),
    entry("skill://team-a/twin/SKILL.md", {"name": "twin", "description": "Team A's"},
          manifest("skill://team-a/twin/SKILL.md")),
    entry("skill://team-b/twin/SKILL.md", {"name": "twin", "description": "Team B's"},
          manifest("skill://team-b/twin/SKILL.md")),
]


def _hostile_md(name: str, extra: str) -> bytes:
    return f"---\nname: {name}\ndescription: hostile\n{extra}---\n\nbody\n".encode()


HOSTILE_FILES: Dict[str, bytes] = {
    "skill://long-line/SKILL.md": _hostile_md("long-line", "a" + " " * 2 ** 20 + "b\n"),
    "skill://long-blank-run/SKILL.md": _hostile_md("long-blank-run", "a" + " " * 60_000 + "b\n"),
    "skill://deep-flow/SKILL.md": _hostile_md("deep-flow", "x: " + "[" * 5000 + "]" * 5000 + "\n"),
    "skill://deep-block/SKILL.md": _hostile_md("deep-block", "".join(" " * i + "k:\n" for i in range(350))),
    "skill://long-int/SKILL.md": _hostile_md("long-int", "n: " + "7" * 5000 + "\n"),
}
HOSTILE_SKILLS: List[Json] = [
    {"uri": uri, "frontmatter": {"name": uri.split("/")[2], "description": "hostile"},
     "resources": [{"uri": uri, "digest": digest(data), "size": len(data)}]}
    for uri, data in HOSTILE_FILES.items()
]


class SkillsServer(StubServer):
    def __init__(self, *, era: str = "modern", declare: bool = True, ttl_ms: int = 60_000,
                 page_size: int = 3, hostile: bool = False) -> None:
        self.skills = SKILLS + (HOSTILE_SKILLS if hostile else [])
        self.files = {**FILES, **(HOSTILE_FILES if hostile else {})}
        self.era = era
        self.declare = declare
        self.ttl_ms = ttl_ms
        self.page_size = page_size
        self.lock = threading.Lock()
        self.calls: List[Tuple[str, Json]] = []
        super().__init__(_Handler, name="test-skills-http")

    def methods(self) -> List[str]:
        with self.lock:
            return [method for method, _params in self.calls]

    @property
    def reads(self) -> List[str]:
        with self.lock:
            return [str(params.get("uri")) for method, params in self.calls if method == "resources/read"]

    def capabilities(self) -> Json:
        found: Json = {"resources": {}}
        if self.declare:
            found["extensions"] = {EXTENSION: {}}
        return found

    def answer(self, method: str, params: Json) -> Tuple[Optional[Json], Optional[Json]]:
        """(result, error) for one request."""
        modern = self.era == "modern"
        cache = {"ttlMs": self.ttl_ms, "cacheScope": "public"} if modern else {}
        if method == "server/discover" and modern:
            return {"supportedVersions": [MODERN], "capabilities": self.capabilities(),
                    "serverInfo": {"name": "skills", "version": "1"}, "ttlMs": 0, "cacheScope": "public"}, None
        if method == "initialize" and not modern:
            return {"protocolVersion": "2025-11-25", "capabilities": self.capabilities(),
                    "serverInfo": {"name": "skills", "version": "1"}}, None
        if method == "skills/list":
            start = int(params.get("cursor") or 0)
            page: Json = {"skills": self.skills[start:start + self.page_size], **cache}
            if start + self.page_size < len(self.skills):
                page["nextCursor"] = str(start + self.page_size)
            return page, None
        if method == "skills/get":
            for skill in self.skills:
                if skill["uri"] == params.get("uri"):
                    return {"skill": skill, **cache}, None
            return None, {"code": -32602, "message": f"No skill is served at {params.get('uri')}"}
        if method == "resources/read":
            uri = str(params.get("uri"))
            if uri not in self.files:
                return None, {"code": -32602, "message": f"Unknown resource {uri}"}
            data = SERVED.get(uri, self.files[uri])
            content: Json = {"uri": uri, "mimeType": "text/markdown"}
            if uri.endswith(".bin"):
                content.update(mimeType="application/octet-stream", blob=base64.b64encode(data).decode())
            else:
                content["text"] = data.decode()
            return {"contents": [content], **cache}, None
        return None, {"code": -32601, "message": f"Method not found: {method}"}


class _Handler(StubHandler):
    owner: SkillsServer
    protocol_version = "HTTP/1.0"

    def send(self, status: int, payload: Any = None) -> None:
        body = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send(405)

    do_DELETE = do_GET

    def do_POST(self) -> None:
        owner = self.owner
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        if "id" not in body:
            return self.send(202)
        method, params = body["method"], body.get("params") or {}
        with owner.lock:
            owner.calls.append((method, params))
        result, error = owner.answer(method, params)
        if error is not None:
            status = 400 if owner.era == "modern" and error["code"] == -32602 else 200
            return self.send(404 if error["code"] == -32601 and owner.era == "modern" else status,
                             {"jsonrpc": "2.0", "id": body["id"], "error": error})
        if owner.era == "modern":
            result = {"resultType": "complete", **(result or {})}
        self.send(200, {"jsonrpc": "2.0", "id": body["id"], "result": result})


if __name__ == "__main__":  # try the docs' example against it: python tests/servers/skills_http.py
    server = SkillsServer().start()
    print(server.url(), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
