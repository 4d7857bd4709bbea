"""The skills extension (SEP-2640): entries, lazy retrieval, and verification of everything read.

The server (tests/servers/skills_http.py) records every request, so each test can show that
nothing was read ahead of need and that a file failing its checks never reaches the caller.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest

import mcpsync
from mcpsync._features.frontmatter import FrontmatterError, parse_frontmatter, same_value

sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))
from skills_http import LOGO, SkillsServer  # noqa: E402


@pytest.fixture
def serve() -> Iterator[Callable[..., SkillsServer]]:
    servers: List[SkillsServer] = []

    def make(**options: Any) -> SkillsServer:
        server = SkillsServer(**options).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def server(serve: Callable[..., SkillsServer]) -> SkillsServer:
    return serve()


@pytest.fixture
def client(server: SkillsServer) -> Iterator[mcpsync.Client]:
    with mcpsync.connect(server.url(), protocol="modern", timeout=10) as client:
        yield client


def test_connecting_and_listing_read_no_skill_file(server, client):
    assert server.reads == []
    skills = client.list_skills()
    assert [s.name for s in skills] == ["good", "refunds", "bad-digest", "bad-size", "bad-frontmatter", "dyn",
                                        "twin", "twin"]
    assert server.methods().count("skills/list") == 3  # three pages, cursors followed
    good = skills[0]
    assert isinstance(good, mcpsync.Skill) and good.uri == "skill://good/SKILL.md"
    assert good.frontmatter["allowed-tools"] == ["Read", "Grep"] and good.description == "A well-behaved skill"
    assert good.root == "skill://good" and not good.dynamic
    assert [(f.uri, f.size) for f in good.files][2] == ("skill://good/assets/logo.bin", 256)
    assert good.files[0].digest.startswith("sha256:")
    assert skills[1].root == "skill://acme/billing/refunds" and skills[5].dynamic and skills[5].files == []
    assert server.reads == []


def test_the_listing_is_cached_for_its_ttl_and_refresh_fetches_it_again(server, client):
    client.list_skills()
    client.list_skills()
    assert server.methods().count("skills/list") == 3
    client.list_skills(refresh=True)
    assert server.methods().count("skills/list") == 6


def test_load_skill_reads_only_skill_md_and_returns_it_verified(server, client):
    loaded = client.load_skill("good")
    assert server.reads == ["skill://good/SKILL.md"]
    assert isinstance(loaded, mcpsync.LoadedSkill) and loaded.content.verified
    assert loaded.text.startswith("---\nname: good\n") and loaded.body.strip().startswith("# good")
    guide = client.read_skill_file(loaded.skill, "references/GUIDE.md")
    assert guide.text == "The guide.\n" and guide.uri == "skill://good/references/GUIDE.md"
    logo = client.read_skill_file(loaded.skill, "./assets/../assets/logo.bin")
    assert logo.data == LOGO and logo.mime_type == "application/octet-stream"
    assert server.reads == ["skill://good/SKILL.md", "skill://good/references/GUIDE.md",
                            "skill://good/assets/logo.bin"]


@pytest.mark.parametrize("name, reason", [("bad-digest", "digest"), ("bad-size", "size"),
                                          ("bad-frontmatter", "frontmatter")])
def test_a_tampered_skill_md_is_refused_and_its_content_not_returned(server, client, name, reason):
    with pytest.raises(mcpsync.SkillVerificationError) as caught:
        client.load_skill(name)
    error = caught.value
    assert isinstance(error, mcpsync.ProtocolError)
    assert error.reason == reason and error.uri == f"skill://{name}/SKILL.md"
    assert f"({reason})" in str(error) and "content was not used" in str(error)
    assert server.reads == [f"skill://{name}/SKILL.md"]  # read once, then dropped
    if reason == "frontmatter":
        assert "'description'" in str(error)
        assert error.expected["description"] == "Summarise reports"
        assert error.actual["description"] == "Exfiltrate credentials"
    if reason == "size":
        assert error.actual == error.expected + len(b"and one more thing\n")
    restored = pickle.loads(pickle.dumps(error))
    assert (restored.uri, restored.reason, str(restored)) == (error.uri, error.reason, str(error))


def test_a_supporting_file_that_changed_since_the_listing_is_refused(server, client):
    skill = client.get_skill("good")
    with pytest.raises(mcpsync.SkillVerificationError) as caught:
        client.read_skill_file(skill, "references/stale.md")
    assert caught.value.reason == "size"
    assert server.reads == ["skill://good/references/stale.md"]


def test_a_file_the_manifest_does_not_list_is_never_read(server, client):
    skill = client.get_skill("good")
    with pytest.raises(mcpsync.SkillVerificationError) as caught:
        client.read_skill_file(skill, "secret.md")
    assert caught.value.reason == "unlisted" and "does not list it" in str(caught.value)
    with pytest.raises(mcpsync.SkillVerificationError) as caught:  # another skill's file, by URI
        client.read_skill_file(skill, "skill://acme/billing/refunds/SKILL.md")
    assert caught.value.reason == "unlisted" and "outside" in str(caught.value)
    with pytest.raises(ValueError):
        client.read_skill_file(skill, "../bad-size/SKILL.md")
    assert server.reads == []


def test_get_skill_by_uri_asks_the_server_and_by_name_uses_the_listing(server, client):
    skill = client.get_skill("skill://acme/billing/refunds/SKILL.md")
    assert skill.name == "refunds" and server.methods()[-1] == "skills/get"
    assert client.get_skill("refunds") == skill
    with pytest.raises(mcpsync.UnknownSkillError) as caught:
        client.get_skill("skill://nope/SKILL.md")
    assert isinstance(caught.value, KeyError) and "No skill is served at 'skill://nope/SKILL.md'" in str(caught.value)
    assert isinstance(caught.value.__cause__, mcpsync.MCPError) and caught.value.__cause__.code == -32602
    with pytest.raises(mcpsync.UnknownSkillError) as caught:
        client.get_skill("nope")
    assert caught.value.matches == [] and "No skill named 'nope'" in str(caught.value)
    with pytest.raises(mcpsync.UnknownSkillError) as caught:
        client.load_skill("twin")  # two skills share the name: neither is picked silently
    assert caught.value.matches == ["skill://team-a/twin/SKILL.md", "skill://team-b/twin/SKILL.md"]
    assert "ambiguous" in str(caught.value)
    assert client.load_skill("skill://team-b/twin/SKILL.md").skill.description == "Team B's"
    assert server.reads == ["skill://team-b/twin/SKILL.md"]


def test_a_dynamic_skill_is_read_only_when_unverified_content_is_accepted(server, client):
    with pytest.raises(mcpsync.SkillVerificationError) as caught:
        client.load_skill("dyn")
    assert caught.value.reason == "dynamic" and server.reads == []
    loaded = client.load_skill("dyn", allow_dynamic=True)
    assert not loaded.content.verified and loaded.skill.name == "dyn"  # the frontmatter was still checked
    assert server.reads == ["skill://dyn/SKILL.md"]


def test_a_server_without_the_extension_is_refused_before_anything_is_sent(serve):
    server = serve(declare=False)
    with mcpsync.connect(server.url(), protocol="modern", timeout=10) as client:
        sent = len(server.methods())
        for call in (client.list_skills, lambda: client.get_skill("good"), lambda: client.load_skill("good")):
            with pytest.raises(mcpsync.CapabilityError, match="io.modelcontextprotocol/skills"):
                call()
        assert len(server.methods()) == sent


def test_a_legacy_server_declaring_the_extension_serves_skills_too(serve):
    server = serve(era="legacy")
    with mcpsync.connect(server.url(), protocol="legacy", timeout=10) as client:
        assert client.era == "legacy"
        assert len(client.list_skills()) == 8
        assert client.load_skill("refunds").skill.uri == "skill://acme/billing/refunds/SKILL.md"
        with pytest.raises(mcpsync.SkillVerificationError):
            client.load_skill("bad-digest")
    assert server.reads == ["skill://acme/billing/refunds/SKILL.md", "skill://bad-digest/SKILL.md"]


# -- the frontmatter reader ------------------------------------------------------------------


def test_frontmatter_reads_the_yaml_skills_are_written_in():
    text = (
        "---\n"
        "name: pdf  # a comment\n"
        "description: 'It''s: quoted'\n"
        "version: 2.10\n"
        "count: 3\n"
        "on: true\n"
        "when: 2024-01-01\n"
        "tools: [Read, \"Bash(git:*)\"]\n"
        "nested:\n"
        "  list:\n"
        "    - a\n"
        "    - key: v\n"
        "      other: w\n"
        "  flow: {a: 1}\n"
        "literal: |\n"
        "  one\n"
        "  two\n"
        "folded: >-\n"
        "  one\n"
        "  two\n"
        "empty:\n"
        "---\n"
        "body\n"
    )
    assert parse_frontmatter(text) == {
        "name": "pdf", "description": "It's: quoted", "version": 2.1, "count": 3, "on": True,
        "when": "2024-01-01", "tools": ["Read", "Bash(git:*)"],
        "nested": {"list": ["a", {"key": "v", "other": "w"}], "flow": {"a": 1}},
        "literal": "one\ntwo\n", "folded": "one two", "empty": None,
    }


@pytest.mark.parametrize("text", ["no fence\n", "---\nname: a\n", "---\nname: &x a\n---\n", "---\n- a\n---\n",
                                  "---\nname: a\nname: b\n---\n"])
def test_frontmatter_it_cannot_read_is_an_error_not_a_guess(text):
    with pytest.raises(FrontmatterError):
        parse_frontmatter(text)


@pytest.mark.timeout(30)  # the old key pattern spent about an hour on the 1 MiB line
@pytest.mark.parametrize("name, found", [
    ("long-line", "longer than 65536 characters"),
    ("long-blank-run", "expected 'key: value'"),
    ("deep-flow", "more than 100 levels deep"),
    ("deep-block", "more than 100 levels deep"),
    ("long-int", "5000 digits"),
])
def test_a_hostile_served_frontmatter_is_refused_quickly_as_a_verification_error(serve, name, found):
    server = serve(hostile=True)
    with mcpsync.connect(server.url(), protocol="modern", timeout=10) as client:
        with pytest.raises(mcpsync.SkillVerificationError) as caught:
            client.load_skill(f"skill://{name}/SKILL.md", timeout=1)
    assert caught.value.reason == "frontmatter" and found in str(caught.value)
    assert len(str(caught.value)) < 400  # the hostile line is not echoed back whole
    assert server.reads == [f"skill://{name}/SKILL.md"]


@pytest.mark.timeout(3)  # linear: milliseconds; the old backtracking pattern took about 5 s on this line
def test_frontmatter_is_read_in_linear_time_below_its_size_limit():
    for line in ("a" + " " * 60_000 + "b", "-" + "x" * 60_000, "'" + "''" * 30_000, '"' + "\\" * 60_000):
        with pytest.raises(FrontmatterError):
            parse_frontmatter(f"---\nname: x\n{line}\n---\n")
    assert parse_frontmatter("---\na" + " :" * 30_000 + "\n---\n") == {"a": " ".join([":"] * 29_999)}


@pytest.mark.parametrize("text, found", [
    ("---\nx: " + "[" * 101 + "]" * 101 + "\n---\n", "more than 100 levels"),
    ("---\nx: " + "{a: " * 101 + "}" * 101 + "\n---\n", "more than 100 levels"),
    ("---\n" + "".join(" " * i + "k:\n" for i in range(101)) + "---\n", "more than 100 levels"),
    ("---\n" + "".join(" " * i + "- \n" for i in range(0, 202, 2)) + "---\n", "more than 100 levels"),
    ("---\nn: -" + "9" * 4301 + "\n---\n", "4301 digits"),
    ("---\nx: " + "a" * (64 * 1024) + "\n---\n", "longer than 65536 characters"),
])
def test_frontmatter_beyond_its_bounds_is_a_frontmatter_error(text, found):
    with pytest.raises(FrontmatterError) as caught:
        parse_frontmatter(text)
    assert found in str(caught.value)


def test_frontmatter_at_its_bounds_is_read():
    # the top-level mapping is the first of the 100 levels
    flow = parse_frontmatter("---\nx: " + "[" * 99 + "]" * 99 + "\n---\n")["x"]
    for _ in range(98):
        flow = flow[0]
    assert flow == []
    deep = parse_frontmatter("---\n" + "".join(" " * i + "k:\n" for i in range(100)) + "---\n")
    for _ in range(99):
        deep = deep["k"]
    assert deep == {"k": None}
    assert parse_frontmatter("---\nn: " + "9" * 4300 + "\n---\n")["n"] == int("9" * 4300)


def test_frontmatter_values_compare_as_json_does():
    assert same_value({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]})
    assert not same_value({"a": True}, {"a": 1})
    assert not same_value({"a": "1"}, {"a": 1})
    assert not same_value({"a": None}, {})


# -- the command ------------------------------------------------------------------------------


def test_the_command_lists_skills_and_shows_one_verified(server, tmp_path):
    from ..cli.test_cli import Shell

    sh = Shell(tmp_path)
    listed = sh.run("skills", server.url())
    assert listed.returncode == 0, listed.stderr
    assert "skill://acme/billing/refunds/SKILL.md" in listed.stdout and "dynamic" in listed.stdout
    as_json = sh.run("skills", "--json", server.url())
    assert [row["frontmatter"]["name"] for row in json.loads(as_json.stdout)][:2] == ["good", "refunds"]
    shown = sh.run("skill", server.url(), "good")
    assert shown.returncode == 0, shown.stderr
    assert "verified" in shown.stdout and "See references/GUIDE.md." in shown.stdout
    refused = sh.run("skill", server.url(), "bad-digest")
    assert refused.returncode == 6 and "failed verification (digest)" in refused.stderr
    assert "Do evil" not in refused.stdout + refused.stderr
    assert sh.run("skill", server.url()).returncode == 2
    assert server.reads == ["skill://good/SKILL.md", "skill://bad-digest/SKILL.md"]


def test_an_entry_without_a_usable_manifest_is_never_loaded(server, client):
    no_manifest = mcpsync.Skill({"uri": "skill://good/SKILL.md", "frontmatter": {"name": "good"}})
    with pytest.raises(mcpsync.SkillVerificationError) as caught:
        client.load_skill(no_manifest)
    assert caught.value.reason == "invalid-entry"
    bad_digest = mcpsync.Skill({"uri": "skill://good/SKILL.md", "frontmatter": {"name": "good"},
                                "resources": [{"uri": "skill://good/SKILL.md", "digest": "md5:00", "size": 155}]})
    with pytest.raises(mcpsync.SkillVerificationError, match="no valid sha256 digest"):
        client.load_skill(bad_digest)
    assert server.reads == []  # an entry that cannot vouch for a file does not get it fetched


@pytest.mark.parametrize("line, value", [
    ('d: "say \\"hi\\" # not a comment"', 'say "hi" # not a comment'),
    ("d: 'it''s # not a comment'", "it's # not a comment"),
    ("d: 'it''s' # a comment", "it's"),
])
def test_a_hash_inside_a_quoted_value_with_an_escaped_quote_is_not_a_comment(line, value):
    # the comment scan once ended a quote at an escaped \" or the first quote of a doubled '':
    # the first line was refused, the second read as "it'" silently
    assert parse_frontmatter(f"---\n{line}\n---\n") == {"d": value}
