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
