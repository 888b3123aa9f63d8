"""The raw judgments of a preference batch as data a reward model is trained on: one record per response with every
rater's scores, reason and place (``preference-responses``, JSON lines or CSV), and one record per preferred pair
in the shape Hugging Face ``datasets`` loads and TRL's preference trainers take (``preference-dpo``, JSON lines).

The pairwise records follow TRL's conversational preference format for vision data (TRL docs, "Dataset formats":
a ``prompt``, a ``chosen`` and a ``rejected`` list of messages, each message's ``content`` a list of ``{"type":
"image"}`` / ``{"type": "text", "text": ...}`` parts, and the images in an ``images`` column). Each record is one
rater's strict preference between two candidates of one item, so every pair traces back to its rater; ties are left
out (a tie prefers nothing: they are in the per-response export). ``votes_*`` count the item's raters who preferred
the chosen response, the rejected one, or neither, so a consensus subset is one filter away. Image paths are
relative to the file: the study bundle's ``data/images/``, or the ``images/`` of the export's zip download, which
holds the file, the images and its dataset card (evaluation.preference.dataset_files, also the Parquet files with
the images inside). A study that shows no image has no ``images`` column: TRL takes a column of that name for
vision data. An optional seeded train/test split by item adds a ``dataset_split`` column.
docs/user-guide/researchers.md lists every column.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from annotate.models import Batch
from annotate.rating.preference.services import DIMENSIONS
from evaluation.preference.selectors import RatedItem, RaterJudgment, batch_has_images, rated_items
from evaluation.table import Table

RESPONSE_COLUMNS = ["item", "question", "image", "source", "split", "candidate", "model", "response", "rater",
                    "helpfulness", "faithfulness", "ethics", "reason", "place", "ranking"]


def _prompt(item: RatedItem) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "image"}] if item.image else []
    return [{"role": "user", "content": [*content, {"type": "text", "text": item.question}]}]


def _answer(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def _scores(judgment: RaterJudgment, candidate: int) -> dict[str, Any]:
    given = judgment.scores.get(candidate, {})
    return {d: given.get(d) for d in DIMENSIONS}


def response_records(item: RatedItem) -> Iterator[dict[str, Any]]:
    """One record per response of the item: what was shown, its model, and every rater's judgment of it."""
    for candidate, (response, model) in enumerate(zip(item.responses, item.models, strict=True), 1):
        yield {
            "item": item.item, "question": item.question, "image": item.image, "image_name": item.image_name or None,
            "source": item.source, "split": item.split, "candidate": candidate, "model": model, "response": response,
            "ratings": [{"rater": j.rater, **_scores(j, candidate), "reason": j.scores.get(candidate, {}).get("reason", ""),
                         "place": j.place(candidate), "ranking": j.ranking} for j in item.judgments],
        }


def _outcome(judgment: RaterJudgment, first: int, second: int) -> int | None:
    """+1 first preferred, -1 second preferred, 0 tie; None without a ranking."""
    a, b = judgment.place(first), judgment.place(second)
    return None if a is None or b is None else (a < b) - (a > b)


def dpo_records(item: RatedItem, *, with_images: bool = True) -> Iterator[dict[str, Any]]:
    """One record per (rater, pair of candidates the rater did not tie), chosen = the one ranked higher."""
    images = {"images": [item.image] if item.image else []} if with_images else {}
    for first, second in itertools.combinations(range(1, len(item.responses) + 1), 2):
        outcomes = {j.rater: _outcome(j, first, second) for j in item.judgments}
        votes = {outcome: sum(1 for o in outcomes.values() if o == outcome) for outcome in (1, 0, -1)}
        for judgment in item.judgments:
            outcome = outcomes[judgment.rater]
            if not outcome:  # a tie, or no ranking: no preference to learn from
                continue
            chosen, rejected = (first, second) if outcome > 0 else (second, first)
            yield {
                "prompt": _prompt(item), "chosen": _answer(item.responses[chosen - 1]),
                "rejected": _answer(item.responses[rejected - 1]), **images,
                "item": item.item, "rater": judgment.rater, "ranking": judgment.ranking,
                "chosen_candidate": chosen, "rejected_candidate": rejected,
                "chosen_model": item.models[chosen - 1], "rejected_model": item.models[rejected - 1],
                "chosen_scores": _scores(judgment, chosen), "rejected_scores": _scores(judgment, rejected),
                "chosen_reason": judgment.scores.get(chosen, {}).get("reason", ""),
                "rejected_reason": judgment.scores.get(rejected, {}).get("reason", ""),
                "votes_chosen": votes[outcome], "votes_rejected": votes[-outcome], "votes_tied": votes[0],
            }


def _lines(records: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    for record in records:
        yield (json.dumps(record, ensure_ascii=False) + "\n").encode()


Split = dict[str, str]  # item -> "train" or "test" (evaluation.preference.dataset_files.split_items)
SPLIT_COLUMN = "dataset_split"  # not "split": the records' own split field is exported under that name


def _with_split(record: dict[str, Any], split: Split | None) -> dict[str, Any]:
    return record if split is None else {**record, SPLIT_COLUMN: split[record["item"]]}


def response_stream(batch: Batch, split: Split | None = None) -> Iterator[tuple[RatedItem, dict[str, Any]]]:
    """(item, record) of the per-response export, the item for what the record names (its image)."""
    for item in rated_items(batch):
        for record in response_records(item):
            yield item, _with_split(record, split)


def dpo_stream(batch: Batch, split: Split | None = None) -> Iterator[tuple[RatedItem, dict[str, Any]]]:
    """(item, record) of the pairs export; no ``images`` column when the study shows no image."""
    with_images = batch_has_images(batch)
    for item in rated_items(batch):
        for record in dpo_records(item, with_images=with_images):
            yield item, _with_split(record, split)


def responses_jsonl(batch: Batch, split: Split | None = None) -> Iterator[bytes]:
    return _lines(record for _, record in response_stream(batch, split))


def dpo_jsonl(batch: Batch, split: Split | None = None) -> Iterator[bytes]:
    return _lines(record for _, record in dpo_stream(batch, split))


def responses_table(batch: Batch, split: Split | None = None) -> Table:
    """The per-response export in long form for spreadsheets and pandas: one row per (response, rater)."""
    rows: list[list[Any]] = []
    for _, record in response_stream(batch, split):
        for rating in record["ratings"]:
            rows.append([record["item"], record["question"], record["image"], record["source"], record["split"],
                         record["candidate"], record["model"], record["response"], rating["rater"],
                         *(rating[d] for d in DIMENSIONS), rating["reason"], rating["place"],
                         rating["ranking"], *([record[SPLIT_COLUMN]] if split is not None else [])])
    columns = RESPONSE_COLUMNS + ([SPLIT_COLUMN] if split is not None else [])
    return Table(title=f"Preference judgments per response — {batch.name}", columns=columns, rows=rows,
                 notes=["One row per (response, rater): final scores (1-5), the reason, the response's place in the "
                        "rater's final ranking (1 = best, tied responses share a place) and that ranking."])
