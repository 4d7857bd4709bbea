"""The skills a FakeServer serves (SEP-2640, ``io.modelcontextprotocol/skills``): entries, files, their digests.

A :class:`SkillDef` is one skill as declared with :meth:`FakeServer.skill
<mcpsync.testing.FakeServer.skill>`: its ``SKILL.md`` (YAML frontmatter rendered from
the given fields, then the body) and its supporting files, each a resource under
``skill://<path>/``. Its :meth:`~SkillDef.entry` is what ``skills/list`` and ``skills/get``
answer: the frontmatter as JSON and a manifest giving every file's byte size and
``sha256:`` digest, computed from the bytes served, so a client's verification passes.
:meth:`SkillDef.tampered` makes the one way to fail it on purpose: serve other bytes
under the same manifest.

The frontmatter is checked when the skill is declared: it is rendered, read back with the
client's own frontmatter reader, and must come back equal, so a value that YAML would read
differently is refused then, not at a client's ``load_skill``.

Values, never changed once built: safe from any thread; nothing here blocks.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Union

from .._rpc.jsonrpc import JSONObject
from .._features.frontmatter import FrontmatterError, parse_frontmatter, same_value

__all__ = ["SKILL_FILE", "SkillDef", "render_frontmatter", "skill_path"]

SKILL_FILE = "SKILL.md"
FileContent = Union[str, bytes]
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
# A string left plain must read as itself in every YAML reader (1.1's too: ``yes`` and dates are not
# strings there): a letter first, no ``:`` or ``#``, nothing a reader might resolve to another type.
_PLAIN_VALUE = re.compile(r"^[A-Za-z][A-Za-z0-9 _.,()/+'-]*(?<! )$")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


@dataclass(frozen=True)
class _File:
    data: bytes
    """The bytes the manifest describes (and, unless tampered with, serves)."""
    mime_type: str
    text: bool
    """Served as ``text`` (it was given as ``str``) or as a base64 ``blob``."""
    served: Optional[bytes] = None
    """Other bytes served instead, under the same manifest entry (see :meth:`SkillDef.tampered`)."""


@dataclass(frozen=True)
class SkillDef:
    """One declared skill: its ``SKILL.md`` URI, frontmatter, files (by URI) and whether it is dynamic."""

    uri: str
    frontmatter: JSONObject
    files: Dict[str, _File] = field(default_factory=dict)
    dynamic: bool = False

    @classmethod
    def build(cls, name: str, description: str, body: str = "", *, files: Optional[Mapping[str, FileContent]] = None,
              frontmatter: Optional[Mapping[str, Any]] = None, path: Optional[str] = None,
              dynamic: bool = False) -> "SkillDef":
        """The skill ``skill://<path>/SKILL.md`` (``path`` defaults to ``name``).

        Raises:
            ValueError: a path that is empty or climbs out (``..``), a file named ``SKILL.md``
                (it is made from the fields and ``body``), or frontmatter YAML cannot carry exactly.
            TypeError: a file whose content is neither ``str`` nor ``bytes``.
        """
        fields: Dict[str, Any] = {"name": name, "description": description, **dict(frontmatter or {})}
        root = f"skill://{skill_path(path if path is not None else name)}"
        text = f"---\n{render_frontmatter(fields)}---\n{body}"
        made = {f"{root}/{SKILL_FILE}": _File(text.encode("utf-8"), "text/markdown", True)}
        for relative, content in (files or {}).items():
            local = skill_path(relative)
            if local == SKILL_FILE:
                raise ValueError(f"{SKILL_FILE} is made from the skill's fields and body; give it no file of that name")
            made[f"{root}/{local}"] = _file(local, content)
        return cls(f"{root}/{SKILL_FILE}", json.loads(json.dumps(fields)), made, dynamic)

    @property
    def root(self) -> str:
        """The skill's directory URI (``skill://<path>``)."""
        return self.uri[:-len(SKILL_FILE) - 1]

    @property
    def name(self) -> str:
        return str(self.frontmatter.get("name", ""))

    def entry(self) -> JSONObject:
        """The skill's entry in ``skills/list`` and ``skills/get``: frontmatter and manifest (or ``"dynamic"``)."""
        resources: Any = "dynamic" if self.dynamic else [
            {"uri": uri, "digest": "sha256:" + hashlib.sha256(f.data).hexdigest(), "size": len(f.data)}
            for uri, f in self.files.items()]
        return {"uri": self.uri, "frontmatter": json.loads(json.dumps(self.frontmatter)), "resources": resources}

    def contents(self, uri: str) -> Optional[List[JSONObject]]:
        """The ``resources/read`` contents of one of its files (None: not one of them)."""
        found = self.files.get(uri)
        if found is None:
            return None
        data = found.served if found.served is not None else found.data
        item: JSONObject = {"uri": uri, "mimeType": found.mime_type}
        if found.text:
            item["text"] = data.decode("utf-8", errors="surrogateescape")
        else:
            item["blob"] = base64.b64encode(data).decode("ascii")
        return [item]

    def tampered(self, relative: str, content: FileContent) -> "SkillDef":
        """This skill serving ``content`` for its file ``relative``, its manifest unchanged.

        Raises:
            KeyError: the skill has no such file.
        """
        uri = f"{self.root}/{skill_path(relative)}"
        old = self.files.get(uri)
        if old is None:
            raise KeyError(f"Skill {self.uri!r} has no file {relative!r}; its files: "
                           f"{', '.join(u[len(self.root) + 1:] for u in self.files)}")
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        return replace(self, files={**self.files, uri: replace(old, served=data)})


def skill_path(path: str) -> str:
    """``path`` as a clean relative path (``a/b``): no leading ``/``, no ``.`` or empty parts.

    Raises:
        ValueError: it is empty, or climbs out with ``..``.
    """
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"{path!r} is not a path inside a skill (empty, or it climbs out with '..')")
    return "/".join(parts)


def render_frontmatter(fields: Mapping[str, Any]) -> str:
    """YAML for ``fields``: one ``key: value`` line each, in flow style, read back to check it.

    Simple strings (``pdf-forms``, ``Fill in PDF forms.``) stay plain; everything else is written
    as JSON, which every YAML reader reads as the same value.

    Raises:
        ValueError: a value that is not JSON, or that the YAML would not give back exactly.
    """
    lines = []
    for key, value in fields.items():
        label = key if isinstance(key, str) and _PLAIN_KEY.match(key) else json.dumps(str(key))
        try:
            written = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"frontmatter field {key!r} is not a JSON value: {exc}") from None
        if isinstance(value, str) and _PLAIN_VALUE.match(value) and value.lower() not in _YAML_WORDS \
                and _reads_back(f"{label}: {value}\n", key, value):
            written = value
        lines.append(f"{label}: {written}\n")
    text = "".join(lines)
    if not _reads_back(text, None, json.loads(json.dumps(dict(fields)))):
        raise ValueError(f"the frontmatter {dict(fields)!r} cannot be written as YAML that reads back the same")
    return text


def _reads_back(yaml: str, key: Optional[str], value: Any) -> bool:
    try:
        found = parse_frontmatter(f"---\n{yaml}---\n")
    except FrontmatterError:
        return False
    return same_value(found if key is None else found.get(key), value) and (key is None or list(found) == [key])


def _file(path: str, content: FileContent) -> _File:
    guessed = "text/markdown" if path.endswith(".md") else mimetypes.guess_type(path)[0]
    if isinstance(content, str):
        return _File(content.encode("utf-8"), guessed or "text/plain", True)
    if isinstance(content, (bytes, bytearray)):
        return _File(bytes(content), guessed or "application/octet-stream", False)
    raise TypeError(f"skill file {path!r}: content must be str or bytes, not {type(content).__name__}")

