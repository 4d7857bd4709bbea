"""The skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): entries, lazy reads, verification.

A server that declares the extension lists its skills with ``skills/list`` and answers
``skills/get`` for one skill by the URI of its ``SKILL.md``. An entry (:class:`~mcpsync.Skill`)
carries the skill's frontmatter and a manifest of its files, each with a ``sha256:<hex>``
digest and a byte size. The files themselves are ordinary resources, read with
``resources/read``. What this module promises, as the extension requires of a host:

* **Nothing ahead of need.** Listing and getting entries read no file; a ``SKILL.md`` is read
  when the skill is loaded (:meth:`Skills.load`), a supporting file when it is read
  (:meth:`Skills.read`), and only that file.
* **Every file verified.** The bytes read must have the manifest's size, then its digest; a
  file not in the manifest (or outside the skill's directory) is not read at all. On any
  mismatch :class:`~mcpsync.SkillVerificationError` is raised and the content is dropped.
* **The frontmatter checked.** A loaded ``SKILL.md``'s YAML frontmatter must equal, field by
  field, the entry's ``frontmatter``.

A skill whose entry says ``"resources": "dynamic"`` has no manifest: its files are read only
when the caller passes ``allow_dynamic=True``, and then come back marked unverified.

Threads: any number of threads may use one :class:`Skills` at once; each call blocks its own
thread for its requests. Nothing here caches file content (the listing is cached by the list
cache, for the ``ttlMs`` the server gives).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Dict, List, Optional, Tuple, Union

from .._protocol.methods import SKILLS_GET, SKILLS_LIST
from .._rpc.jsonrpc import INVALID_PARAMS
from .._rpc.options import CallOptions
from ..exceptions import MCPError, ProtocolError, SkillVerificationError, UnknownSkillError
from ..skills import LoadedSkill, Skill, SkillContent, SkillFile
from .frontmatter import FrontmatterError, parse_frontmatter, same_value, split_frontmatter
from .lists import Lists
from .._session.meta import SKILLS_EXTENSION
from .._session.session import Session

__all__ = ["SKILLS_EXTENSION", "Skills", "verify"]

SkillRef = Union[Skill, str]
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class Skills:
    """One client's skills requests (see ``Client.list_skills`` and the methods after it)."""

    def __init__(self, session: Session, lists: Lists) -> None:
        self._session = session
        self._lists = lists

    def _require(self, what: str) -> None:
        self._session.require_extension(SKILLS_EXTENSION, what)

    def list(self, refresh: bool, options: CallOptions) -> List[Skill]:
        """Every entry, across all pages (cached for the listing's ``ttlMs``/``cacheScope``); reads no file.

        Raises:
            CapabilityError: the server does not declare the skills extension.
            ProtocolError: a malformed page or a repeated cursor.
        """
        self._require("list skills")
        return self._lists.cached("skills", SKILLS_LIST, "skills", Skill, refresh, options)

    def get(self, ref: SkillRef, options: CallOptions) -> Skill:
        """The entry for ``ref``: a :class:`Skill` as given, a URI by ``skills/get``, a name from the listing.

        Raises:
            CapabilityError: the server does not declare the skills extension.
            UnknownSkillError: no skill at that URI, or no listed skill (or more than one) of that name.
            ProtocolError: the server's answer holds no skill entry.
        """
        if isinstance(ref, Skill):
            return ref
        self._require(f"get skill {ref!r}")
        return self._get_by_uri(ref, options) if "://" in ref else self._named(ref, options)

    def _named(self, name: str, options: CallOptions) -> Skill:
        """The one listed skill called ``name`` (names are labels: never one of several, picked silently)."""
        matches = [skill for skill in self.list(False, options) if skill.name == name]
        if len(matches) != 1:
            raise UnknownSkillError(name, self._session.name, [skill.uri for skill in matches])
        return matches[0]

    def _get_by_uri(self, ref: str, options: CallOptions) -> Skill:
        """The entry ``skills/get`` gives for the URI ``ref``."""
        try:
            result = self._session.call(SKILLS_GET, {"uri": ref}, options)
        except MCPError as exc:
            if exc.code == INVALID_PARAMS:
                raise UnknownSkillError(ref, self._session.name) from exc
            raise
        entry = result.get("skill") if isinstance(result, dict) else None
        if not isinstance(entry, dict):
            raise ProtocolError(f"skills/get for {ref!r}: the result holds no 'skill' entry")
        return Skill.from_dict(entry)

    def read(self, ref: SkillRef, path: str, options: CallOptions, allow_dynamic: bool = False) -> SkillContent:
        """One file of a skill, verified against its manifest entry before it is returned.

        ``path`` is relative to the skill's directory (``"references/FORMS.md"``; ``..`` may not
        leave it) or a full resource URI. Only a file the manifest lists is read.

        Raises:
            ValueError: ``path`` leaves the skill's directory.
            SkillVerificationError: the file is not in the manifest, or its size or digest differ
                (nothing is returned), or the skill is dynamic and ``allow_dynamic`` is False.
            UnknownSkillError, CapabilityError: as :meth:`get`.
            MCPError: the server refused the read (``ResourceNotFound`` for an unknown file).
        """
        skill = self.get(ref, options)
        uri = resolve(skill, path)
        return self._read(skill, uri, options, allow_dynamic)

    def load(self, ref: SkillRef, options: CallOptions, allow_dynamic: bool = False) -> LoadedSkill:
        """Read the skill's ``SKILL.md`` and verify its size, digest and frontmatter against the entry.

        Raises:
            SkillVerificationError: any of the three differ, or the frontmatter cannot be read
                (the skill is not loaded; nothing is returned).
            and as :meth:`read`.
        """
        skill = self.get(ref, options)
        content = self._read(skill, skill.uri, options, allow_dynamic)
        expected = skill.to_dict().get("frontmatter")
        if not isinstance(expected, dict):
            raise SkillVerificationError(skill.uri, "invalid-entry", "the entry carries no frontmatter object")
        try:
            text = content.data.decode("utf-8")
            found = parse_frontmatter(text)
            body = split_frontmatter(text)[1]
        except (UnicodeDecodeError, FrontmatterError) as exc:
            raise SkillVerificationError(skill.uri, "frontmatter", f"its frontmatter cannot be read ({exc})",
                                         expected=expected) from None
        if not same_value(found, expected):
            differing = sorted(key for key in set(found) | set(expected)
                               if key not in found or key not in expected or not same_value(found[key], expected[key]))
            raise SkillVerificationError(skill.uri, "frontmatter", "the file's frontmatter differs from the entry's "
                                         f"in {', '.join(map(repr, differing))}", expected=expected, actual=found)
        return LoadedSkill(skill, content, body)

    def _read(self, skill: Skill, uri: str, options: CallOptions, allow_dynamic: bool) -> SkillContent:
        """Check ``uri`` against the manifest, read it, verify it (in that order: nothing unlisted is read)."""
        self._require(f"read skill file {uri!r}")
        entry = _manifest_entry(skill, uri, allow_dynamic)
        data, mime_type = self._fetch(uri, options)
        if entry is None:  # a dynamic skill, allowed by the caller: nothing to verify against
            return SkillContent(uri, data, mime_type, verified=False)
        verify(uri, data, entry)
        return SkillContent(uri, data, mime_type)

    def _fetch(self, uri: str, options: CallOptions) -> Tuple[bytes, Optional[str]]:
        return _bytes_of(uri, self._session.read_resource(uri, options))


def resolve(skill: Skill, path: str) -> str:
    """The resource URI of ``path`` in ``skill``: a URI as given, a relative path against the skill's root.

    Raises:
        ValueError: a relative path that climbs out of the skill's directory, or an empty one.
    """
    if "://" in path:
        return path
    parts: List[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise ValueError(f"{path!r} leaves the directory of skill {skill.uri!r}")
            parts.pop()
        else:
            parts.append(part)
    if not parts:
        raise ValueError(f"{path!r} names no file of skill {skill.uri!r}")
    return f"{skill.root}/{'/'.join(parts)}"


def verify(uri: str, data: bytes, entry: SkillFile) -> None:
    """Check ``data`` against a manifest entry: its size first, then its SHA-256 digest.

    Raises:
        SkillVerificationError: ``"size"`` or ``"digest"`` when they differ, ``"invalid-entry"``
            when the entry gives no valid size or digest.
    """
    size, digest = _checked(uri, entry)
    if len(data) != size:
        raise SkillVerificationError(uri, "size", f"{len(data)} bytes read, the manifest says {size}",
                                     expected=size, actual=len(data))
    import hashlib  # only when a skill is verified: keeps `import mcpsync` light
    import hmac

    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if not hmac.compare_digest(actual, digest):
        raise SkillVerificationError(uri, "digest", f"the bytes hash to {actual}, the manifest says {digest}",
                                     expected=digest, actual=actual)


def _checked(uri: str, entry: SkillFile) -> Tuple[int, str]:
    """The entry's ``(size, digest)``, or SkillVerificationError ``"invalid-entry"`` if either is malformed."""
    size, digest = entry.size, entry.digest
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise SkillVerificationError(uri, "invalid-entry", f"the manifest gives no valid size ({size!r})")
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise SkillVerificationError(uri, "invalid-entry", f"the manifest gives no valid sha256 digest ({digest!r})")
    return size, digest


def _manifest_entry(skill: Skill, uri: str, allow_dynamic: bool) -> Optional[SkillFile]:
    """The manifest entry ``uri`` must match; None for a dynamic skill the caller accepts unverified.

    Raises:
        SkillVerificationError: the file is outside the skill, unlisted, or cannot be verified.
    """
    inside = uri == skill.uri or uri.startswith(skill.root + "/")
    if not inside:
        raise SkillVerificationError(uri, "unlisted", f"it is outside the directory of skill {skill.uri!r}; "
                                     "it was not read")
    resources = skill.to_dict().get("resources")
    if resources == "dynamic":
        if allow_dynamic:
            return None
        raise SkillVerificationError(uri, "dynamic", "the skill publishes no manifest to verify against; it was "
                                     "not read (pass allow_dynamic=True to accept unverified content)")
    if not isinstance(resources, list):
        raise SkillVerificationError(uri, "invalid-entry", "the skill's entry has no manifest ('resources' is "
                                     f"{type(resources).__name__}); it was not read")
    entries = [SkillFile.from_dict(item) for item in resources if isinstance(item, dict) and item.get("uri") == uri]
    if not entries:
        raise SkillVerificationError(uri, "unlisted", f"the manifest of skill {skill.uri!r} does not list it; "
                                     "it was not read (get the entry again if the skill changed)")
    _checked(uri, entries[0])  # an entry that cannot vouch for the file: do not fetch it
    return entries[0]


def _bytes_of(uri: str, result: Any) -> Tuple[bytes, Optional[str]]:
    """The raw bytes (and MIME type) of ``uri`` in a ``resources/read`` result: text as UTF-8, blobs decoded."""
    item = _contents_of(uri, result)
    mime_type = item.get("mimeType") if isinstance(item.get("mimeType"), str) else None
    if isinstance(item.get("blob"), str):
        try:
            return base64.b64decode(item["blob"], validate=True), mime_type
        except (binascii.Error, ValueError) as exc:
            raise ProtocolError(f"resources/read of {uri!r} returned a blob that is not base64") from exc
    if isinstance(item.get("text"), str):
        return str(item["text"]).encode("utf-8", errors="surrogatepass"), mime_type
    raise ProtocolError(f"resources/read of {uri!r} returned neither text nor a blob")


def _contents_of(uri: str, result: Any) -> Dict[str, Any]:
    """The contents item for ``uri`` in a ``resources/read`` result (the only item, if it names no URI of ours)."""
    contents = result.get("contents") if isinstance(result, dict) else None
    items: List[Dict[str, Any]] = [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
    matching = [c for c in items if c.get("uri") == uri] or (items if len(items) == 1 else [])
    if not matching:
        raise ProtocolError(f"resources/read of {uri!r} returned no contents for that URI")
    return matching[0]
