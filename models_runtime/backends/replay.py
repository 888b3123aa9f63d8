"""Plays back the answers recorded for this model in the batch (task field ``recorded_answers``).

Settings: ``chunk_delay`` (float seconds, default 0.02) between streamed words.
"""

from __future__ import annotations

from collections.abc import Iterator

from models_runtime.base import Backend, BackendSettings, ModelRequest, PermanentModelError, Stream
from models_runtime.textstream import count_words, stream_words


class ReplayBackend(Backend):
    name = "replay"

    def __init__(self, settings: BackendSettings | None = None):
        super().__init__(settings)
        unknown = set(self.settings) - {"chunk_delay"}
        if unknown:
            raise PermanentModelError(
                f"unknown replay setting(s): {', '.join(sorted(unknown))}; known: chunk_delay"
            )
        self.chunk_delay = float(self.settings.get("chunk_delay", 0.02))

    def _chunks(self, request: ModelRequest, stream: Stream) -> Iterator[str]:
        context = request.context
        answers = context.recorded_answers
        index = context.round_index
        if not 0 <= index < len(answers) or answers[index] is None:
            raise PermanentModelError(
                f"no recorded answer for round {index} of task {context.task_id!r} "
                f"({len(answers)} recorded answer(s))"
            )
        text = answers[index]
        stream.prompt_tokens = sum(count_words(message.text_content) for message in request.messages)
        stream.completion_tokens = count_words(text)
        yield from stream_words(text, self.chunk_delay)
