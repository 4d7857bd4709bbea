"""The values of the Skills extension (``io.modelcontextprotocol/skills``, SEP-2640).

:class:`Skill` is a listed entry (nothing of the skill read yet), :class:`SkillFile` one
file of its manifest, :class:`SkillContent` one verified read, and :class:`LoadedSkill`
a skill whose ``SKILL.md`` was read and checked. They are values: safe to share between
threads, and they never do I/O; the reading and checking is the client's
(:meth:`mcpsync.Client.load_skill`, :meth:`~mcpsync.Client.read_skill_file`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .types import MCPObject, _Field

__all__ = ["LoadedSkill", "Skill", "SkillContent", "SkillFile"]


class SkillFile(MCPObject):
    """One file of a skill's manifest: its resource URI, the ``sha256:<hex>`` digest of its bytes, their count."""

    __slots__ = ()
    _repr_fields = ("uri", "size")
    uri: _Field[str] = _Field("uri", "")
    digest: _Field[str] = _Field("digest", "")
    size: _Field[Optional[int]] = _Field("size", None)


class Skill(MCPObject):
    """A skill's entry, as ``skills/list`` or ``skills/get`` gave it; nothing of the skill has been read.

    ``uri`` names the skill's ``SKILL.md``; ``frontmatter`` is that file's YAML frontmatter as
    the server rendered it (``name`` and ``description`` at least); ``files`` is the manifest
    every later read is verified against (empty when the skill is ``dynamic``: generated
    content the server cannot publish digests for).
    """

    __slots__ = ()
    _repr_fields = ("name", "uri")
    uri: _Field[str] = _Field("uri", "")

    @property
    def frontmatter(self) -> Dict[str, Any]:
        value = self._data.get("frontmatter")
        return dict(value) if isinstance(value, dict) else {}

    @property
    def name(self) -> str:
        """``frontmatter.name`` (a label: two skills of one server may share it; the ``uri`` is the identity)."""
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.frontmatter.get("description", ""))

    @property
    def dynamic(self) -> bool:
        """True when the server publishes no manifest (``"resources": "dynamic"``): nothing can be verified."""
        return self._data.get("resources") == "dynamic"

    @property
    def files(self) -> List[SkillFile]:
        """The manifest: ``SKILL.md`` and every supporting file (empty for a dynamic or malformed entry)."""
        items = self._data.get("resources")
        return [SkillFile.from_dict(f) for f in items if isinstance(f, dict)] if isinstance(items, list) else []

    @property
    def root(self) -> str:
        """The skill's directory URI: ``uri`` without ``/SKILL.md``; relative paths resolve against it."""
        uri = self.uri
        return uri[:-len("/SKILL.md")] if uri.endswith("/SKILL.md") else uri.rsplit("/", 1)[0]


class SkillContent:
    """A skill file's content that passed verification (``verified`` is False only for a dynamic skill's file).

    Attributes:
        uri: the file's resource URI.
        data: its raw bytes (exactly what the manifest's size and digest describe).
        mime_type: the MIME type the server gave, if any.
        verified: whether size and digest were checked against a manifest entry.
    """

    __slots__ = ("uri", "data", "mime_type", "verified")

    def __init__(self, uri: str, data: bytes, mime_type: Optional[str] = None, verified: bool = True) -> None:
        self.uri = uri
        self.data = data
        self.mime_type = mime_type
        self.verified = verified

    @property
    def text(self) -> str:
        """The bytes decoded as UTF-8 (undecodable bytes replaced)."""
        return self.data.decode("utf-8", errors="replace")

    def __repr__(self) -> str:
        return f"SkillContent(uri={self.uri!r}, size={len(self.data)}, verified={self.verified})"


class LoadedSkill:
    """A skill whose ``SKILL.md`` was read and verified: size, digest and frontmatter match its entry.

    Attributes:
        skill: the entry it was verified against (hold it: later reads of the skill's files
            are checked against this manifest).
        content: the verified ``SKILL.md``.
        body: the text after the frontmatter block.
    """

    __slots__ = ("skill", "content", "body")

    def __init__(self, skill: Skill, content: SkillContent, body: str) -> None:
        self.skill = skill
        self.content = content
        self.body = body

    @property
    def text(self) -> str:
        """The whole ``SKILL.md``, frontmatter included."""
        return self.content.text

    def __repr__(self) -> str:
        return f"LoadedSkill(name={self.skill.name!r}, uri={self.skill.uri!r}, verified={self.content.verified})"
