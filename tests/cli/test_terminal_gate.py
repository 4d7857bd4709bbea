"""The output gate's function: controls, bidi and invisible characters are shown, not obeyed."""

from mcpsync._terminal import is_safe, shown


def test_escape_sequences_are_shown_visibly() -> None:
    assert shown("\x1b[1A\x1b[2Knpx server") == "\\x1b[1A\\x1b[2Knpx server"
    assert shown("\x1b]52;c;aGk=\x07") == "\\x1b]52;c;aGk=\\x07"  # OSC 52 clipboard write
    assert shown("\x9b2J") == "\\x9b2J"  # C1 CSI


def test_bidi_and_invisible_characters_are_shown() -> None:
    assert shown("abc\u202edef") == "abc\\u202edef"
    assert shown("a\u200bb\u2066c\ufeff") == "a\\u200bb\\u2066c\\ufeff"


def test_lines_keeps_newlines_and_tabs_but_never_carriage_return() -> None:
    assert shown("a\nb\tc", lines=True) == "a\nb\tc"
    assert shown("a\nb") == "a\\x0ab"
    assert shown("ok\rFAKE", lines=True) == "ok\\x0dFAKE"


def test_plain_text_and_letters_pass_unchanged() -> None:
    for text in ("hello", "héllo ✓ 東京", ""):
        assert shown(text) == text
        assert is_safe(text)
    assert not is_safe("\x07")
    assert shown(42) == "42"


def _reference(text: str, lines: bool) -> str:
    """The gate's definition, one character at a time (what the fast paths must agree with)."""
    from mcpsync._terminal import _escape, _unsafe

    return "".join(_escape(ch) if _unsafe(ch, lines) else ch for ch in text)


def test_the_fast_paths_agree_with_the_definition_character_by_character() -> None:
    import json
    import random

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mcpsync._terminal import shown_json

    # long texts cross the 4096-character blocks; the alphabet mixes letters, controls, bidi, newlines
    alphabet = st.sampled_from(list("ab é東\n\t\r\x1b\x07\x9b\x7f\u202e\u2066\u200b\u2028\ufeff\u00a0")
                               + ["\U000e0041", "\ue000", "\U0001f600"])

    @settings(max_examples=150, deadline=None)
    @given(st.lists(alphabet, max_size=60), st.integers(0, 5000), st.booleans())
    def check(chars: list, pad: int, lines: bool) -> None:
        text = "x" * pad + "".join(chars) + "é" * (pad // 3)
        assert shown(text, lines=lines) == _reference(text, lines)
        assert is_safe(text, lines=lines) == (_reference(text, lines) == text)
        dumped = json.dumps({"v": text}, ensure_ascii=False, indent=1)
        assert json.loads(shown_json(dumped)) == {"v": text} and is_safe(shown_json(dumped), lines=True)

    check()
    every = "".join(chr(code) for code in random.Random(7).sample(range(0x110000), 20000))
    assert shown(every, lines=True) == _reference(every, True)
