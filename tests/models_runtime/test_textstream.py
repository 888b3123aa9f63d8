"""Word chunks and stop-string cutting, shared by the backends."""

from __future__ import annotations

import pytest

from models_runtime.textstream import StopCutter, count_words, word_chunks


@pytest.mark.parametrize(
    "text", ["", "one", "  lead and trail  ", "a\nb\n\nAnswer: 42", "tabs\tand  spaces "]
)
def test_word_chunks_join_back_to_the_text(text):
    assert "".join(word_chunks(text)) == text


def test_word_chunks_are_words_with_their_leading_space():
    assert word_chunks("The answer\nis B") == ["The", " answer", "\nis", " B"]
    assert count_words("The answer\nis B") == 4


def feed_all(cutter: StopCutter, pieces: list[str]) -> str:
    out = "".join(cutter.feed(piece) for piece in pieces)
    return out + cutter.flush()


@pytest.mark.parametrize(
    ("pieces", "stops", "expected"),
    [
        (["Answer: B", "\n\nmore"], ["\n\n"], "Answer: B"),
        (["Answer: B\n", "\nmore"], ["\n\n"], "Answer: B"),  # stop split across chunks
        (["abc", "de<", "|end", "|>tail"], ["<|end|>"], "abcde"),
        (["ab<", "|x"], ["<|end|>"], "ab<|x"),  # a false start is released
        (["no stop here"], ["###"], "no stop here"),
        (["x", "STOP", "y"], [], "xSTOPy"),
        (["first END then STOP"], ["STOP", "END"], "first "),  # the earliest stop wins
    ],
)
def test_stop_cutter(pieces, stops, expected):
    assert feed_all(StopCutter(stops), pieces) == expected


def test_stop_cutter_holds_back_only_a_possible_stop_prefix():
    cutter = StopCutter(["<|end|>"])

    assert cutter.feed("hello <|") == "hello "
    assert cutter.feed("en") == ""
    assert cutter.feed("d|> bye") == ""
    assert cutter.stopped and cutter.flush() == ""
