"""One request's prompt as token ids (kept from one slice of generation to the next) and the left-padded batch
built from several of them.

A processor's output for one prompt holds three kinds of values: ``input_ids``; other tensors with one value per
token (``attention_mask``, ``token_type_ids``, ...), padded along with the ids; and the rest (``pixel_values``,
``image_grid_thw``, ...), whose rows are images, concatenated in row order as processors batch them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch

from models_runtime.base import PermanentModelError


class EncodedPrompt(NamedTuple):
    input_ids: list[int]
    per_token: dict[str, torch.Tensor]  # 1-D, as long as input_ids; attention_mask is rebuilt, not kept
    per_image: dict[str, torch.Tensor]
    other: dict[str, Any]  # non-tensor values: must be equal in every row of a batch

    @classmethod
    def from_encoding(cls, encoding: Mapping[str, Any]) -> EncodedPrompt:
        """``encoding``: a tokenizer's or processor's output for one prompt, unpadded, with ``return_tensors="pt"``."""
        ids = encoding["input_ids"]
        length = ids.shape[-1]
        per_token: dict[str, torch.Tensor] = {}
        per_image: dict[str, torch.Tensor] = {}
        other: dict[str, Any] = {}
        for key, value in encoding.items():
            if key in ("input_ids", "attention_mask"):
                continue
            if not isinstance(value, torch.Tensor):
                other[key] = value
            elif value.dim() == 2 and tuple(value.shape) == (1, length):
                per_token[key] = value[0]
            else:
                per_image[key] = value
        return cls(ids[0].tolist(), per_token, per_image, other)


def collate(
    rows: Sequence[tuple[EncodedPrompt, Sequence[int]]], *, pad_token_id: int, filler_rows: int = 0
) -> dict[str, Any]:
    """One left-padded batch: each row's prompt followed by the tokens it has generated so far, then
    ``filler_rows`` rows of a single pad token (to reach a compiled batch size; what they generate is ignored)."""
    sequences = [[*prompt.input_ids, *generated] for prompt, generated in rows]
    sequences += [[pad_token_id]] * filler_rows
    width = max(len(sequence) for sequence in sequences)
    input_ids = torch.full((len(sequences), width), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for index, sequence in enumerate(sequences):
        input_ids[index, width - len(sequence) :] = torch.tensor(sequence, dtype=torch.long)
        attention_mask[index, width - len(sequence) :] = 1
    batch: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
    prompts = [prompt for prompt, _ in rows]
    for key in sorted({key for prompt in prompts for key in prompt.per_token}):
        # Zero where a row has no value: padding, generated tokens (plain text) and filler rows.
        values = torch.zeros((len(sequences), width), dtype=_dtype_of(prompts, key))
        for index, prompt in enumerate(prompts):
            if key in prompt.per_token:
                start = width - len(sequences[index])
                values[index, start : start + len(prompt.input_ids)] = prompt.per_token[key]
        batch[key] = values
    for key in sorted({key for prompt in prompts for key in prompt.per_image}):
        batch[key] = torch.cat([prompt.per_image[key] for prompt in prompts if key in prompt.per_image])
    for key in sorted({key for prompt in prompts for key in prompt.other}):
        others = [prompt.other.get(key) for prompt in prompts]
        if any(other != others[0] for other in others):
            raise PermanentModelError(f'the processor gave "{key}" values that differ between rows of a batch')
        batch[key] = others[0]
    return batch


def _dtype_of(prompts: Sequence[EncodedPrompt], key: str) -> torch.dtype:
    return next(prompt.per_token[key].dtype for prompt in prompts if key in prompt.per_token)
