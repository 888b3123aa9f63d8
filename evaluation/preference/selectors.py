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
from dataclasses import dataclass, field
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


def preference_data(batch: Batch) -> PreferenceData:
    """The batch's final rankings and candidate scores with candidate labels. Four queries, whatever the size."""
    if batch.kind != Batch.Kind.PREFERENCE:
        raise ApplicationError(
            f"Batch {batch.name!r} is a {batch.get_kind_display()} batch; preference reports are for "
            f"{Batch.Kind.PREFERENCE.label} batches.",
            code="wrong_batch_kind",
        )
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
