"""Fuzz target: the SKILL.md frontmatter reader (a served file, read after its digest matched).

Every text, YAML-shaped or not, hostile in length, depth or number size, ends in a dict or a
FrontmatterError (which ``load_skill`` raises as SkillVerificationError), in bounded time.
"""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from mcpsync._features.frontmatter import FrontmatterError, parse_frontmatter

from .fuzzing import LEVELS, fuzz

pieces = st.sampled_from([
    "name", "description", "key", "- ", "-", ": ", ":", " ", "  ", "\t", "\n", "\r\n", "#", " # c", "'", "''", '"',
    '\\"', "\\", "[", "]", "{", "}", ",", "|", ">", "|-", ">+", "&a", "*a", "!tag", "? ", "<<", "~", "null", "true",
    "0x1F", "0o17", "1e5", ".inf", ".nan", "-12", "3.5", "---", "\ufeff", "\u2028", "é", "\x00",
])
lines = st.lists(pieces, max_size=12).map("".join)
hostile = st.one_of(
    st.integers(1, 80_000).map(lambda n: "a" + " " * n + "b"),
    st.integers(1, 5000).map(lambda n: "x: " + "[" * n + "]" * n),
    st.integers(1, 3000).map(lambda n: "x: " + "{a: " * n + "}" * n),
    st.integers(1, 400).map(lambda n: "".join(" " * i + "k:\n" for i in range(n))),
    st.integers(4000, 20_000).map(lambda n: "n: " + "9" * n),
    st.integers(1, 30_000).map(lambda n: "k: " + "'" + "''" * n),
    st.integers(1, 30_000).map(lambda n: "- " * n + "a"),
)
texts = st.one_of(
    st.lists(lines | hostile, max_size=20).map(lambda body: "---\n" + "\n".join(body) + "\n---\nbody\n"),
    st.text(max_size=300).map(lambda t: "---\n" + t),
    st.text(max_size=300),
)


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_frontmatter(level: str) -> None:
    fuzz("frontmatter", level, texts, parse_frontmatter, (FrontmatterError,))
