"""Properties of the position and escaping helpers the integrations rely on."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from trainlint.reporters.github import escape_data, escape_property
from trainlint.textpos import LineIndex, split_lines, strip_eol

_UNESCAPE = {"%25": "%", "%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}


def _runner_unescape(text: str) -> str:
    """What the Actions runner does to a property value (a single left-to-right pass)."""
    return re.sub(r"%25|%0D|%0A|%3A|%2C", lambda m: _UNESCAPE[m.group(0)], text)


@given(st.text())
def test_property_escaping_round_trips_and_hides_separators(value):
    escaped = escape_property(value)
    assert not set(escaped) & {",", ":", "\r", "\n"}
    assert _runner_unescape(escaped) == value


@given(st.text())
def test_data_escaping_round_trips_and_stays_on_one_line(value):
    escaped = escape_data(value)
    assert "\n" not in escaped and "\r" not in escaped
    assert _runner_unescape(escaped) == value


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_lines_reassemble_and_match_pythons_row_counting(text):
    lines = split_lines(text)
    assert "".join(lines) == text
    assert all(not re.search(r"\r\n|\r|\n", strip_eol(line)) for line in lines)


@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n")),
    st.data(),
)
def test_byte_column_counts_utf8_bytes(line, data):
    column = data.draw(st.integers(min_value=1, max_value=len(line) + 1))
    index = LineIndex(line + "\n")
    assert index.byte_column(1, column) == len(line[: column - 1].encode("utf-8")) + 1
