"""Tiny models with random weights, built locally for tests and the demo (no network, no hub), and a mid-size
one for GPU benchmarks.

They answer gibberish, but they go through the real ``from_pretrained`` / processor / ``generate`` path,
so everything around a real checkpoint is exercised. Each tiny one is well under a few MB.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used, so importing this module stays cheap
    import torch
    from transformers import LlamaConfig, PreTrainedModel, PreTrainedTokenizerFast

# Lines the tokenizer is trained on: enough to learn some merges for the words the app uses.
TRAINING_TEXT = [
    "What is shown in the image? Answer with the letter of the correct option.",
    "The answer is A. The answer is B. The answer is C. The answer is D.",
    "Look at the picture again: count the objects and give a number.",
    "That is not correct. Think about the colours and the shapes once more.",
    "Answer: 42. Answer: yes. Answer: no. Answer: a red circle and a blue square.",
    "Thanks for the feedback, I reconsidered the question and the options.",
    "system user assistant hint feedback round task question image",
]

RESERVED_TOKENS = [
    "<unk>",
    "<s>",
    "</s>",
    "<pad>",
    "<image>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|end|>",
]

# Content may be a plain string (text-only models) or a list of parts, as processors expect.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "<|end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

IMAGE_SIZE = 32
PATCH_SIZE = 8
TINY_TEXT: dict[str, Any] = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "max_position_embeddings": 512}
TINY_VISION: dict[str, Any] = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
               "projection_dim": 32, "image_size": IMAGE_SIZE, "patch_size": PATCH_SIZE}
# About 0.8B parameters: a Llama of 16 layers x 2048 (grouped-query attention, as Llama 3.2 1B) under a CLIP
# 224/14 vision tower of ViT-B size.
MID_TEXT: dict[str, Any] = {"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 16, "num_attention_heads": 32,
            "num_key_value_heads": 8, "max_position_embeddings": 4096}
MID_VISION: dict[str, Any] = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
              "projection_dim": 512, "image_size": 224, "patch_size": 14}


def build_tokenizer(vocab_size: int = 384) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on TRAINING_TEXT, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    # Byte-level: any text (and any generated id) round-trips, so random weights never hit <unk>.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=RESERVED_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        additional_special_tokens=RESERVED_TOKENS[4:],
        chat_template=CHAT_TEMPLATE,
        padding_side="left",
    )


def _llama_config(tokenizer: PreTrainedTokenizerFast, sizes: dict[str, Any]) -> LlamaConfig:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        **sizes,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def _unprintable_token_ids(tokenizer: PreTrainedTokenizerFast) -> list[int]:
    """Ids that decode to control characters, partial UTF-8 bytes or special tokens (other than EOS)."""
    ids = []
    for token_id in range(len(tokenizer)):
        if token_id == tokenizer.eos_token_id:
            continue
        text = tokenizer.decode([token_id])
        if token_id in tokenizer.all_special_ids or not all(
            (ch.isprintable() and ch != "\ufffd") or ch in " \n" for ch in text
        ):
            ids.append(token_id)
    return ids


def _set_generation_defaults(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, *, never_ends: bool = False
) -> None:
    config = model.generation_config
    config.bos_token_id = tokenizer.bos_token_id
    config.eos_token_id = tokenizer.eos_token_id
    config.pad_token_id = tokenizer.pad_token_id
    # Random weights babble; keep the babble printable so the demo and logs stay readable.
    config.suppress_tokens = _unprintable_token_ids(tokenizer)
    if never_ends:  # a benchmark's requests all run to max_new_tokens
        config.suppress_tokens.append(tokenizer.eos_token_id)


def build_tiny_causal_lm(path: str | os.PathLike[str], seed: int = 0) -> str:
    """Save a text-only tiny Llama causal LM and its tokenizer (with chat template) under ``path``."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    model = LlamaForCausalLM(_llama_config(tokenizer, TINY_TEXT))
    _set_generation_defaults(model, tokenizer)
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def build_tiny_llava(path: str | os.PathLike[str], seed: int = 0) -> str:
    """Save a LLaVA-style image-text-to-text model (tiny CLIP vision tower + tiny Llama) and its processor."""
    return _build_llava(path, seed, TINY_TEXT, TINY_VISION)


def build_mid_llava(path: str | os.PathLike[str], seed: int = 0, device: str = "cpu") -> str:
    """Save the ~0.8B-parameter LLaVA-style model (``MID_TEXT``, ``MID_VISION``) in bfloat16, for GPU benchmarks;
    ``device`` draws the random weights there (on a GPU, in a second instead of a minute).

    Its answers never end early (EOS is suppressed): every request runs to its max_new_tokens."""
    import torch

    with torch.device(device):
        return _build_llava(path, seed, MID_TEXT, MID_VISION, dtype=torch.bfloat16, never_ends=True)


def _build_llava(
    path: str | os.PathLike[str],
    seed: int,
    text: dict[str, Any],
    vision: dict[str, Any],
    *,
    dtype: torch.dtype | None = None,
    never_ends: bool = False,
) -> str:
    import torch
    from transformers import CLIPVisionConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    image_size, patch_size = vision["image_size"], vision["patch_size"]
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    assert isinstance(image_token_id, int)  # one token in, one id out
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(**vision),
        text_config=_llama_config(tokenizer, text),
        image_token_index=image_token_id,
        image_seq_length=(image_size // patch_size) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    model = LlavaForConditionalGeneration(config)
    if dtype is not None:
        model.to(dtype)  # type: ignore[arg-type]  # transformers wraps .to; typeshed does not bind it as a method
    _set_generation_defaults(model, tokenizer, never_ends=never_ends)

    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS token, dropped again by the "default" strategy
        chat_template=CHAT_TEMPLATE,
    )
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return str(path)
