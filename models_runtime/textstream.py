"""Small text helpers shared by the backends: word chunks, word counts, stop-string cutting."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator

_WORD_CHUNK = re.compile(r"\s*\S+|\s+$")


def word_chunks(text: str) -> list[str]:
    """Split into chunks of (leading whitespace + word); joining them gives ``text`` back exactly."""
    return _WORD_CHUNK.findall(text)


def count_words(text: str) -> int:
    return len(text.split())


def stream_words(text: str, delay: float = 0.0) -> Iterator[str]:
    """Yield ``text`` word by word, sleeping ``delay`` seconds between chunks (demo pacing)."""
    for index, chunk in enumerate(word_chunks(text)):
        if index and delay > 0:
            time.sleep(delay)
        yield chunk


class StopCutter:
    """Cuts a streamed text at the first stop string, holding back only what could start one.

    ``feed`` returns the text that is safe to show now; ``stopped`` turns True once a stop string is seen,
    after which everything else is dropped. ``flush`` returns what was held back when the stream ends.
    """

    def __init__(self, stops: Iterable[str]):
        self.stops = [stop for stop in stops if stop]
        self.stopped = False
        self._pending = ""

    def feed(self, chunk: str) -> str:
        if self.stopped:
            return ""
        if not self.stops:
            return chunk
        self._pending += chunk
        cut = min((i for i in (self._pending.find(stop) for stop in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            out, self._pending = self._pending[:cut], ""
            return out
        keep = self._longest_stop_prefix_suffix()
        out = self._pending[: len(self._pending) - keep]
        self._pending = self._pending[len(self._pending) - keep :]
        return out

    def flush(self) -> str:
        out, self._pending = ("" if self.stopped else self._pending), ""
        return out

    def _longest_stop_prefix_suffix(self) -> int:
        """Length of the longest tail of the pending text that is a proper prefix of some stop string."""
        best = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(self._pending)), best, -1):
                if self._pending.endswith(stop[:size]):
                    best = size
                    break
        return best
