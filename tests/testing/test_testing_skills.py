"""FakeServer.skill(): a fake serves skills (SEP-2640) that mcpsync's client lists, loads and verifies."""

from __future__ import annotations

import math
from typing import Iterator, List

import pytest

import mcpsync
from mcpsync.testing import FakeServer

EXTENSION = "io.modelcontextprotocol/skills"
LOGO = bytes(range(256))
BODY = "# PDF forms\n\nRead references/FORMS.md first.\n"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("skills") as fake:
        fake.skill("pdf-forms", "Fill in PDF forms: use it when a form must be filled.", BODY,
                   files={"references/FORMS.md": "How to fill a form.\n", "assets/logo.png": LOGO},
                   frontmatter={"license": "MIT", "metadata": {"version": "1.2"}, "allowed-tools": ["Read", "Grep"]})
        fake.skill("refunds", "Refund requests", path="acme/billing/refunds")
        yield fake


def _reads(server: FakeServer) -> List[str]:
    return [str(r.params.get("uri")) for r in server.requests if r.method == "resources/read"]


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_the_client_lists_loads_and_verifies_what_the_fake_serves(server: FakeServer, protocol: str) -> None:
    with server.client(protocol=protocol) as client:
        assert EXTENSION in client.server_capabilities.extensions
        skills = client.list_skills()
        assert [s.name for s in skills] == ["pdf-forms", "refunds"]
        assert skills[1].uri == "skill://acme/billing/refunds/SKILL.md" and skills[1].root == "skill://acme/billing/refunds"
        loaded = client.load_skill("pdf-forms")
        assert loaded.content.verified and loaded.body == BODY
        assert loaded.skill.frontmatter == {
            "name": "pdf-forms", "description": "Fill in PDF forms: use it when a form must be filled.",
            "license": "MIT", "metadata": {"version": "1.2"}, "allowed-tools": ["Read", "Grep"]}
        guide = client.read_skill_file(loaded.skill, "references/FORMS.md")
        assert guide.text == "How to fill a form.\n" and guide.verified and guide.mime_type == "text/markdown"
        logo = client.read_skill_file(loaded.skill, "assets/logo.png")
        assert logo.data == LOGO and logo.mime_type == "image/png"
        assert client.get_skill("skill://acme/billing/refunds/SKILL.md") == skills[1]
        assert client.load_skill(skills[1]).body == ""


def test_nothing_is_read_ahead_of_need_and_the_record_shows_it(server: FakeServer) -> None:
    with server.client() as client:
        entries = client.list_skills()
        assert _reads(server) == []  # connecting and listing read no file
        assert [f.uri for f in entries[0].files] == ["skill://pdf-forms/SKILL.md",
                                                     "skill://pdf-forms/references/FORMS.md",
                                                     "skill://pdf-forms/assets/logo.png"]
        client.load_skill("pdf-forms")
        assert _reads(server) == ["skill://pdf-forms/SKILL.md"]


def test_a_tampered_file_fails_the_client_s_verification(server: FakeServer) -> None:
    server.tamper_skill_file("pdf-forms", "references/FORMS.md", "How to fill a form!\n")  # same length
    server.tamper_skill_file("skill://pdf-forms/SKILL.md", "SKILL.md", "---\nname: pdf-forms\n---\n")
    with server.client() as client:
        with pytest.raises(mcpsync.SkillVerificationError) as caught:
            client.read_skill_file("pdf-forms", "references/FORMS.md")
        assert caught.value.reason == "digest"
        with pytest.raises(mcpsync.SkillVerificationError) as caught:
            client.load_skill("pdf-forms")
        assert caught.value.reason == "size"
        assert client.read_skill_file("pdf-forms", "assets/logo.png").data == LOGO  # the others are untouched
    with pytest.raises(KeyError, match="has no file 'nope.md'"):
        server.tamper_skill_file("pdf-forms", "nope.md", "x")
    with pytest.raises(KeyError, match="serves no skill"):
        server.tamper_skill_file("nope", "SKILL.md", "x")


def test_declaring_a_skill_again_replaces_it_and_removing_it_withdraws_it(server: FakeServer) -> None:
    server.tamper_skill_file("refunds", "SKILL.md", "changed")
    entry = server.skill("refunds", "Refunds, now with a guide", path="acme/billing/refunds",
                         files={"GUIDE.md": "Refund within 30 days.\n"})
    assert entry.description == "Refunds, now with a guide" and len(entry.files) == 2
    with server.client() as client:
        assert client.load_skill("refunds").skill.description == "Refunds, now with a guide"
        server.remove_skill(entry)
        with pytest.raises(mcpsync.UnknownSkillError):
            client.get_skill(entry.uri)
        assert [s.name for s in client.list_skills(refresh=True)] == ["pdf-forms"]


def test_a_dynamic_skill_lists_no_manifest() -> None:
    with FakeServer("dyn") as server:
        entry = server.skill("weekly", "Made on demand", "Today's plan.\n", dynamic=True)
        assert entry.dynamic and entry.files == []
        with server.client() as client:
            with pytest.raises(mcpsync.SkillVerificationError) as caught:
                client.load_skill("weekly")
            assert caught.value.reason == "dynamic" and _reads(server) == []
            loaded = client.load_skill("weekly", allow_dynamic=True)
            assert loaded.body == "Today's plan.\n" and not loaded.content.verified


def test_the_listing_is_paged_like_every_list() -> None:
    with FakeServer("paged", page_size=1) as server:
        for name in ("a", "b", "c"):
            server.skill(name, f"Skill {name}")
        with server.client() as client:
            assert [s.name for s in client.list_skills()] == ["a", "b", "c"]
        assert [r.method for r in server.requests].count("skills/list") == 3


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_a_fake_without_skills_declares_no_extension(protocol: str) -> None:
    with FakeServer("plain") as server, server.client(protocol=protocol) as client:
        assert "extensions" not in client.server_capabilities
        with pytest.raises(mcpsync.CapabilityError):
            client.list_skills()
        with pytest.raises(mcpsync.MCPError) as caught:
            client.request("skills/list")
        assert caught.value.code == -32601


def test_frontmatter_reads_back_the_same_in_any_yaml_reader() -> None:
    yaml = pytest.importorskip("yaml")
    awkward = {"when": "2024-01-01", "answer": "yes", "count": "123", "colon": "a: b", "hash": "a #b",
               "quote": "'x'", "empty": "", "multi": "line one\nline two", "nested": {"k": [1, 2.5, None, True]},
               "unicode": "café", "plain": "Fill in forms, then save (carefully)."}
    with FakeServer("yaml") as server:
        server.skill("odd", "A: description with a colon", frontmatter=awkward)
        with server.client() as client:
            loaded = client.load_skill("odd")  # mcpsync's own reader agrees (the frontmatter check passed)
    header = loaded.text.split("---\n")[1]
    assert yaml.safe_load(header) == {"name": "odd", "description": "A: description with a colon", **awkward}
    assert "plain: Fill in forms, then save (carefully).\n" in header and "name: odd\n" in header


def test_declaring_what_cannot_be_served_fails_at_once() -> None:
    server = FakeServer("bad")
    with pytest.raises(ValueError, match="climbs out"):
        server.skill("x", "y", path="../escape")
    with pytest.raises(ValueError, match="SKILL.md is made from"):
        server.skill("x", "y", files={"./SKILL.md": "mine"})
    with pytest.raises(ValueError, match="not a JSON value"):
        server.skill("x", "y", frontmatter={"ratio": math.nan})
    with pytest.raises(TypeError, match="str or bytes"):
        server.skill("x", "y", files={"n.txt": 3})  # type: ignore[dict-item]
    server.close()
