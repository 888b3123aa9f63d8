"""Reads for preference reports: plain rows from a batch of kind ``preference`` for ``preference_metrics``.

Only final rankings and final ratings count (drafts never reach a report); annotators are named by pseudonym.

Which model wrote which candidate: the preference records carry the responses as plain texts, and the data model
keeps no model per candidate turn. A record may name them in a ``models`` field, one name per response in the
same order (``"models": ["gpt-4o", "llava-1.5", "qwen2-vl"]``); the importer checks it and keeps it in the
conversation's metadata, and the report compares models. A batch without it is compared by position
("Candidate 1" = the first response of every record), which is what it supports: a fixed order of systems per
record. When only some records name their models, the others are left out of the report, and said so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

from annotate.errors import ApplicationError
from annotate.models import Batch, Conversation, Ranking, Rating, Turn
from annotate.rating.preference.services import DIMENSIONS, ranking_parse
from evaluation.preference.metrics import RankedJudgment

MODELS_FIELD = "models"
LabelledBy = Literal["models", "positions"]


@dataclass(frozen=True)
class CandidateScore:
    item: str  # the conversation's external id
    rater: str  # pseudonym
    label: str  # the candidate's model (or position)
    helpfulness: int | None
    faithfulness: int | None
    ethics: int | None

    def value(self, dimension: str) -> int | None:
        value: int | None = getattr(self, dimension)
        return value


@dataclass
class PreferenceData:
    labelled_by: LabelledBy
    conversations: int  # in the batch
    judgments: list[RankedJudgment] = field(default_factory=list)
    scores: list[CandidateScore] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (conversation, why) for rated ones left out

    @property
    def rankings(self) -> int:
        return len(self.judgments)

    @property
    def raters(self) -> int:
        return len({j.rater for j in self.judgments} | {s.rater for s in self.scores})


def _named_models(metadata: dict[str, Any]) -> object:
    """The importer keeps a checked list under "models"; batches imported before it knew the field have it among
    the extra fields."""
    metadata = metadata or {}
    return metadata[MODELS_FIELD] if MODELS_FIELD in metadata else metadata.get("extra", {}).get(MODELS_FIELD)


def _labels(named: object, candidates: int, labelled_by: LabelledBy) -> tuple[tuple[str, ...] | None, str]:
    """(labels, "") or (None, why the conversation is left out)."""
    if labelled_by == "positions":
        return tuple(f"Candidate {k}" for k in range(1, candidates + 1)), ""
    if named is None:
        return None, f"no {MODELS_FIELD!r} field"
    if not isinstance(named, list) or not all(isinstance(n, str) and n.strip() for n in named):
        return None, f"{MODELS_FIELD!r} is not a list of model names"
    if len(named) != candidates:
        return None, f"{MODELS_FIELD!r} has {len(named)} names for {candidates} responses"
    return tuple(n.strip() for n in named), ""


def check_preference_batch(batch: Batch) -> None:
    """A batch of another kind has no preference report or exports: a 400 naming its kind."""
    if batch.kind != Batch.Kind.PREFERENCE:
        raise ApplicationError(
            f"Batch {batch.name!r} is a {batch.get_kind_display()} batch; preference reports are for "
            f"{Batch.Kind.PREFERENCE.label} batches.",
            code="wrong_batch_kind",
        )


def preference_data(batch: Batch) -> PreferenceData:
    """The batch's final rankings and candidate scores with candidate labels. Four queries, whatever the size."""
    check_preference_batch(batch)
    conversations = list(
        Conversation.objects.filter(batch=batch).order_by("position", "id").values_list("id", "external_id", "metadata")
    )
    candidate_turns: dict[int, list[int]] = defaultdict(list)  # conversation -> turn indices, candidate 1 first
    for conversation_id, index in (
        Turn.objects.filter(conversation__batch=batch, kind=Turn.Kind.CANDIDATE)
        .order_by("conversation_id", "index").values_list("conversation_id", "index")
    ):
        candidate_turns[conversation_id].append(index)
    rankings = defaultdict(list)
    for conversation_id, rater, text in (
        Ranking.objects.filter(conversation__batch=batch, is_final=True)
        .order_by("annotator__pseudonym").values_list("conversation_id", "annotator__pseudonym", "ranking")
    ):
        rankings[conversation_id].append((rater, text))
    ratings = defaultdict(list)
    for conversation_id, index, rater, *values in (
        Rating.objects.filter(turn__conversation__batch=batch, turn__kind=Turn.Kind.CANDIDATE, is_final=True)
        .order_by("turn__index", "annotator__pseudonym")
        .values_list("turn__conversation_id", "turn__index", "annotator__pseudonym", *DIMENSIONS)
    ):
        ratings[conversation_id].append((index, rater, values))

    any_named = any(_named_models(metadata) is not None for _, _, metadata in conversations)
    data = PreferenceData(labelled_by="models" if any_named else "positions", conversations=len(conversations))
    for conversation_id, external_id, metadata in conversations:
        if conversation_id not in rankings and conversation_id not in ratings:
            continue  # not rated yet: nothing to leave out
        indices = candidate_turns[conversation_id]
        labels, why = _labels(_named_models(metadata), len(indices), data.labelled_by)
        if labels is None:
            data.left_out.append((external_id, why))
            continue
        for rater, text in rankings[conversation_id]:
            try:
                groups = ranking_parse(text, len(indices))
            except ApplicationError as error:  # final rankings are checked on save; kept honest anyway
                data.left_out.append((external_id, f"the ranking by {rater} is unreadable: {error.message}"))
                continue
            data.judgments.append(RankedJudgment(item=external_id, rater=rater, candidates=labels,
                                                 groups=tuple(tuple(group) for group in groups)))
        label_of = dict(zip(indices, labels, strict=True))
        data.scores.extend(CandidateScore(external_id, rater, label_of[index], *values)
                           for index, rater, values in ratings[conversation_id])
    return data


# --- every final judgment with what was judged (the raw exports) ----------------------------------------------


@dataclass(frozen=True)
class RaterJudgment:
    rater: str  # pseudonym
    ranking: str  # "" when the rater saved scores but no final ranking
    groups: tuple[tuple[int, ...], ...]  # the ranking parsed (best first; a group is a tie); () without one
    scores: dict[int, dict[str, Any]]  # candidate number -> helpfulness, faithfulness, ethics, reason

    def place(self, candidate: int) -> int | None:
        """1 = best; tied candidates share a place; None without a ranking."""
        return next((level for level, group in enumerate(self.groups, 1) if candidate in group), None)


@dataclass(frozen=True)
class RatedItem:
    item: str  # the record's id
    question: str
    image: str | None  # images/<sha256>.<ext>: the file in the study bundle's data/images/ (None: no image)
    image_blob: int | None  # ImageBlob id, for the bundle to copy the file
    image_name: str  # the path the import file gave
    source: str
    split: str
    responses: list[str]  # candidate 1 first
    models: list[str | None]  # the model of each response (None: the record named none)
    judgments: list[RaterJudgment]  # by rater pseudonym


def batch_has_images(batch: Batch) -> bool:
    """Whether any item of the batch shows an image (its pairs then have an ``images`` column)."""
    return Conversation.objects.filter(batch=batch, image__isnull=False).exists()


def _image_path(sha256: str, file_name: str) -> str:
    suffix = PurePosixPath(file_name).suffix or ".png"
    return f"images/{sha256}{suffix}"


def rated_items(batch: Batch) -> Iterator[RatedItem]:
    """Every item with at least one final judgment (a final ranking or final scores), in the batch's order, with
    each rater's final ranking and final scores and reasons; drafts are left out. Four queries."""
    check_preference_batch(batch)
    rankings: dict[int, dict[str, str]] = defaultdict(dict)
    for conversation_id, rater, text in Ranking.objects.filter(conversation__batch=batch, is_final=True).values_list(
            "conversation_id", "annotator__pseudonym", "ranking").iterator(chunk_size=5000):
        rankings[conversation_id][rater] = text
    scores: dict[int, dict[str, dict[int, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for conversation_id, index, rater, comment, *values in (
            Rating.objects.filter(turn__conversation__batch=batch, turn__kind=Turn.Kind.CANDIDATE, is_final=True)
            .values_list("turn__conversation_id", "turn__index", "annotator__pseudonym", "comment", *DIMENSIONS)
            .iterator(chunk_size=5000)):
        scores[conversation_id][rater][index] = {**dict(zip(DIMENSIONS, values, strict=True)), "reason": comment}
    turns: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for conversation_id, index, text in (Turn.objects.filter(conversation__batch=batch, kind=Turn.Kind.CANDIDATE)
                                         .order_by("conversation_id", "index")
                                         .values_list("conversation_id", "index", "text").iterator(chunk_size=5000)):
        turns[conversation_id].append((index, text))
    conversations = (Conversation.objects.filter(batch=batch).order_by("position", "id")
                     .values_list("id", "external_id", "question", "image_id", "image__sha256", "image__file",
                                  "image_name", "source", "split", "metadata"))
    for (conversation_id, external_id, question, image_id, sha256, file_name, image_name, source, split,
         metadata) in conversations.iterator(chunk_size=2000):
        if conversation_id not in rankings and conversation_id not in scores:
            continue
        candidates = turns[conversation_id]
        number = {index: n for n, (index, _) in enumerate(candidates, 1)}
        named = _named_models(metadata)
        models: list[str | None] = [str(m) for m in named] if isinstance(named, list) and \
            len(named) == len(candidates) else [None] * len(candidates)
        judgments = []
        for rater in sorted(set(rankings[conversation_id]) | set(scores[conversation_id])):
            text = rankings[conversation_id].get(rater, "")
            try:
                groups = tuple(tuple(g) for g in ranking_parse(text, len(candidates))) if text else ()
            except ApplicationError:  # final rankings are checked on save; an unreadable one is exported as text
                groups = ()
            judgments.append(RaterJudgment(
                rater=rater, ranking=text, groups=groups,
                scores={number[index]: values for index, values in scores[conversation_id][rater].items()
                        if index in number}))
        yield RatedItem(
            item=external_id, question=question, image=_image_path(sha256, file_name) if image_id else None,
            image_blob=image_id, image_name=image_name if image_id else "", source=source, split=split,
            responses=[text for _, text in candidates], models=models, judgments=judgments)
