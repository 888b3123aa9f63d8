"""FIRE rating reports: plain rows from the database → ``evaluation.fire.rating_metrics`` → tables and JSON.

Only final ratings count (drafts never reach a report). Annotators are named by pseudonym. A turn is numbered as
the rating page shows it (1 = the conversation's first turn, the student's first response), in every table and
file, so a disputed turn can be found where raters saw it. Confidence intervals resample conversations (several
raters score one conversation). The functions the researcher pages, the API and ``export_fire`` call:

- ``fire_ratings_table(batch)``: Table A1 (mean feedback and response rating per split, 95% bootstrap CIs)
- ``fire_rating_summary(batch, by)``: mean and CI per split / source / turn, for each turn kind
- ``fire_agreement_table(batch)``, ``fire_kappa_table(batch)``: Krippendorff's alpha (ordinal and interval) and
  pairwise quadratic-weighted kappa, for the batch and per source
- ``fire_disagreements_table(batch)``: the turns raters disagree on most, for adjudication
- ``fire_ratings_long(batch)``: one row per rating (conversation, turn, annotator pseudonym, score)
- ``fire_conversations_export(batch)``: the conversations back in FIRE JSON, with ``human_rating`` (mean of
  raters) and ``human_ratings`` (per rater) on each rated turn
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from statistics import mean
from typing import Literal, TypedDict, cast

from django.db.models import Prefetch

from annotate.errors import ApplicationError
from annotate.models import Batch, Conversation, Rating, Turn
from annotate.wording import phrase, phrase_in
from evaluation.fire.metrics import Rating as RatingTriple
from evaluation.fire.rating_metrics import (
    TurnKind,
    disagreement_items,
    fire_rating_table,
    krippendorff_alpha,
    pairwise_weighted_kappa,
    summarize_ratings,
)
from evaluation.stats import round_half_up
from evaluation.table import Cell, Table

SCALE = [1, 2, 3, 4, 5]
NO_SPLIT = phrase("(no split)")
NO_SOURCE = phrase("(no source)")
RATED_KINDS = ("feedback", "response")
# A turn's kind in a table's cells: the stored word in files, translated on pages.
KIND_CELLS = {"feedback": phrase_in("FIRE turn kind", "feedback"), "response": phrase_in("FIRE turn kind", "response")}
TURN_NOTE = phrase("Turn: its number on the rating page (1 = the first student response).")


@dataclass(frozen=True)
class RatingRow:
    conversation: str  # the conversation's external id
    split: str
    source: str
    turn: int  # the number the rating page shows: the turn's index + 1
    role: str
    kind: TurnKind
    annotator: str  # pseudonym
    score: int
    comment: str

    @property
    def item(self) -> tuple[str, int]:
        return (self.conversation, self.turn)


def fire_rating_rows(batch: Batch) -> list[RatingRow]:
    """Every final FIRE rating of the batch, in conversation and turn order (one query)."""
    rows = (
        Rating.objects.filter(turn__conversation__batch=batch, is_final=True, score__isnull=False,
                              turn__kind__in=RATED_KINDS)
        .order_by("turn__conversation__position", "turn__conversation_id", "turn__index", "annotator__pseudonym")
        .values_list("turn__conversation__external_id", "turn__conversation__split", "turn__conversation__source",
                     "turn__index", "turn__role", "turn__kind", "annotator__pseudonym", "score", "comment")
    )
    # The filter above: the kind is one of RATED_KINDS, the score is set.
    return [RatingRow(conversation, split, source, index + 1, role, cast(TurnKind, kind), annotator,
                      cast(int, score), comment)
            for conversation, split, source, index, role, kind, annotator, score, comment in rows]


def fire_rating_counts(batch: Batch) -> tuple[int, int, int]:
    """(conversations, final ratings, raters) of a FIRE batch: what its reports are computed over."""
    ratings = Rating.objects.filter(turn__conversation__batch=batch, is_final=True, score__isnull=False,
                                    turn__kind__in=RATED_KINDS)
    return (batch.conversations.count(), ratings.count(),
            ratings.values("annotator_id").distinct().count())


def _rows_or_error(batch: Batch) -> list[RatingRow]:
    rows = fire_rating_rows(batch)
    if not rows:
        raise ApplicationError(phrase("Batch %(batch)s has no final FIRE ratings to report yet.",
                                      batch=repr(batch.name)), code="no_ratings")
    return rows


def _split_order(batch: Batch) -> list[str]:
    """Splits in the order of the imported file."""
    splits = batch.conversations.order_by("position", "id").values_list("split", flat=True)
    return list(dict.fromkeys(split or NO_SPLIT for split in splits))


def fire_ratings_table(batch: Batch, *, digits: int = 2, n_resamples: int = 2000, seed: int = 0) -> Table:
    """FIRE Table A1: per split the mean rating of teacher feedback and of student responses, with 95% CIs."""
    rows = _rows_or_error(batch)
    present = {row.split or NO_SPLIT for row in rows}
    return fire_rating_table(
        ((row.split or NO_SPLIT, row.kind, row.score, row.conversation) for row in rows),
        splits=[split for split in _split_order(batch) if split in present],
        digits=digits, n_resamples=n_resamples, seed=seed,
        title=phrase("Human ratings (1-5) of FIRE teacher feedback and student responses — %(batch)s",
                     batch=batch.name),
    )


GroupBy = Literal["split", "source", "turn"]


def fire_rating_summary(batch: Batch, by: GroupBy = "split", *, digits: int = 2, n_resamples: int = 2000,
                        seed: int = 0) -> Table:
    """Mean and 95% bootstrap CI (resampling conversations) of response and feedback ratings per split, source
    or turn."""
    if by not in ("split", "source", "turn"):
        raise ApplicationError(f"Unknown grouping {by!r}; expected split, source or turn.", code="bad_grouping")
    rows = _rows_or_error(batch)

    def key(row: RatingRow) -> tuple[str | int, TurnKind]:
        groups: dict[str, str | int] = {"split": row.split or NO_SPLIT, "source": row.source or NO_SOURCE,
                                        "turn": row.turn}
        group = groups[by]
        return (group, row.kind)

    scored = [(key(r), r.score, r.conversation) for r in rows]
    summaries = summarize_ratings(scored, n_resamples=n_resamples, seed=seed)
    keys = list(dict.fromkeys(k for k, _, _ in scored))  # the summaries' keys, typed
    first_seen = {group: n for n, group in enumerate(dict.fromkeys(group for group, _ in keys))}
    table_rows: list[list[Cell]] = []
    # Groups in file order (turns by index), feedback before response within a group.
    for group, kind in sorted(keys, key=lambda k: (k[0] if by == "turn" else first_seen[k[0]], k[1])):
        summary = summaries[(group, kind)]
        ci = summary.ci
        table_rows.append([group, KIND_CELLS.get(kind, kind), summary.count, round_half_up(summary.mean, digits),
                           round_half_up(ci.low, digits) if ci else None,
                           round_half_up(ci.high, digits) if ci else None])
    label = {"split": phrase_in("dataset split", "Split"), "source": phrase_in("dataset source", "Source"),
             "turn": phrase_in("conversation turn", "Turn")}[by]
    title = {"split": phrase("Mean FIRE ratings per split — %(batch)s", batch=batch.name),
             "source": phrase("Mean FIRE ratings per source — %(batch)s", batch=batch.name),
             "turn": phrase("Mean FIRE ratings per turn — %(batch)s", batch=batch.name)}[by]
    note = phrase("95%% CI by percentile bootstrap resampling conversations (several raters score one "
                  "conversation), %(n)s resamples, seed %(seed)s.", n=n_resamples, seed=seed)
    return Table(
        title=title,
        columns=[label, phrase_in("FIRE turn kind", "Kind"), phrase_in("number of ratings", "N"),
                 phrase("Mean"), phrase("95% CI low"), phrase("95% CI high")],
        rows=table_rows,
        notes=[phrase("%(note)s %(turn)s", note=note, turn=TURN_NOTE) if by == "turn" else note],
    )


def _triples(rows: list[RatingRow]) -> list[RatingTriple]:
    return [(row.item, row.annotator, row.score) for row in rows]


def _scopes(rows: list[RatingRow]) -> list[tuple[str, list[RatingRow]]]:
    by_source: dict[str, list[RatingRow]] = defaultdict(list)
    for row in rows:
        by_source[row.source or NO_SOURCE].append(row)
    scopes: list[tuple[str, list[RatingRow]]] = [(phrase_in("all rows of a table", "All"), rows)]
    if len(by_source) > 1:
        scopes += [(phrase("source: %(source)s", source=source), group) for source, group in by_source.items()]
    return scopes


def _round(value: float | None, digits: int = 3) -> Decimal | None:
    return None if value is None else round_half_up(value, digits)


class KappaPair(TypedDict):
    rater_a: str  # pseudonyms
    rater_b: str
    kappa: float | None  # None: fewer than 2 shared turns, or undefined


class Agreement(TypedDict):
    """Inter-rater agreement in one scope: the batch, or one source."""

    scope: str
    items: int
    raters: int
    ratings: int
    alpha_ordinal: float | None
    alpha_interval: float | None
    kappa_mean: float | None
    kappa_pairs: list[KappaPair]


def fire_agreement(batch: Batch) -> list[Agreement]:
    """Agreement per scope (the batch, then each source): alpha ordinal/interval and pairwise kappa."""
    result: list[Agreement] = []
    for scope, rows in _scopes(_rows_or_error(batch)):
        triples = _triples(rows)
        kappas = pairwise_weighted_kappa(triples, labels=SCALE)
        defined = [k for k in kappas.values() if k is not None]
        result.append({
            "scope": scope,
            "items": len({row.item for row in rows}),
            "raters": len({row.annotator for row in rows}),
            "ratings": len(rows),
            "alpha_ordinal": krippendorff_alpha(triples, level="ordinal", value_domain=SCALE),
            "alpha_interval": krippendorff_alpha(triples, level="interval"),
            "kappa_mean": mean(defined) if defined else None,
            "kappa_pairs": [{"rater_a": str(a), "rater_b": str(b), "kappa": k} for (a, b), k in kappas.items()],
        })
    return result


def fire_agreement_table(batch: Batch) -> Table:
    rows: list[list[Cell]] = [
        [s["scope"], s["items"], s["raters"], s["ratings"], _round(s["alpha_ordinal"]), _round(s["alpha_interval"]),
         _round(s["kappa_mean"]), len(s["kappa_pairs"])]
        for s in fire_agreement(batch)
    ]
    return Table(
        title=phrase("Inter-rater agreement on FIRE ratings — %(batch)s", batch=batch.name),
        columns=[phrase("Scope"), phrase_in("report table column", "Items"), phrase("Raters"), phrase("Ratings"),
                 phrase("Alpha (ordinal)"), phrase("Alpha (interval)"), phrase("Mean pairwise kappa"),
                 phrase("Rater pairs")],
        rows=rows,
        notes=[phrase("Items are rated turns. Krippendorff's alpha (krippendorff package); Cohen's kappa with "
                      "quadratic weights over the 1-5 scale (scikit-learn), per rater pair on the turns both rated "
                      "(at least 2).")],
    )


def fire_kappa_table(batch: Batch) -> Table:
    rows: list[list[Cell]] = [[s["scope"], p["rater_a"], p["rater_b"], _round(p["kappa"])]
            for s in fire_agreement(batch) for p in s["kappa_pairs"]]
    return Table(title=phrase("Pairwise quadratic-weighted kappa — %(batch)s", batch=batch.name),
                 columns=[phrase("Scope"), phrase("Rater A"), phrase("Rater B"), phrase("Kappa")], rows=rows,
                 notes=[phrase("'-': fewer than 2 shared turns, or kappa undefined (a rater gave one score only).")])


def fire_disagreements_table(batch: Batch, *, top: int = 20) -> Table:
    rows = _rows_or_error(batch)
    turns: dict[Hashable, RatingRow] = {row.item: row for row in rows}  # any rating of a turn names it
    found = disagreement_items(_triples(rows), top=top)
    return Table(
        title=phrase("Turns with the largest rater disagreement — %(batch)s", batch=batch.name),
        columns=[phrase("Conversation"), phrase_in("conversation turn", "Turn"), phrase_in("FIRE turn kind", "Kind"),
                 phrase("Scores"), phrase("Spread"), phrase("Std")],
        rows=[[turns[d.item_id].conversation, turns[d.item_id].turn,
               KIND_CELLS.get(turns[d.item_id].kind, turns[d.item_id].kind),
               " ".join(f"{rater}={int(score)}" for rater, score in d.scores.items()),
               int(d.spread), _round(d.std, 2)] for d in found],
        notes=[phrase("%(turn)s Spread = highest minus lowest score; ordered by spread, then standard deviation.",
                      turn=TURN_NOTE)],
    )


def fire_ratings_long(batch: Batch) -> Table:
    """Ratings in long format: one row per (conversation, turn, annotator); turn as the rating page numbers it."""
    rows = fire_rating_rows(batch)
    return Table(
        title=f"FIRE ratings, long format — {batch.name}",
        columns=["conversation", "split", "source", "turn", "role", "kind", "annotator", "score", "comment"],
        rows=[[r.conversation, r.split, r.source, r.turn, r.role, r.kind, r.annotator, r.score, r.comment]
              for r in rows],
        notes=["turn: its number on the rating page (1 = the first student response)."],
    )


def _mean_json(scores: list[int]) -> float | int:
    value = round_half_up(Fraction(sum(scores), len(scores)), 4)
    return int(value) if value == value.to_integral_value() else float(value)


def fire_conversations_export(batch: Batch) -> list[dict[str, object]]:
    """The batch's conversations in the released FIRE JSON schema, each rated turn carrying ``turn`` (its number
    on the rating page), ``human_rating`` (the mean of its raters' final scores) and ``human_ratings``
    (``[{"annotator", "score", "comment"}]``)."""
    ratings = Rating.objects.filter(is_final=True, score__isnull=False).select_related("annotator").order_by(
        "annotator__pseudonym")
    turns = Turn.objects.order_by("index").prefetch_related(Prefetch("ratings", queryset=ratings))
    conversations = (
        Conversation.objects.filter(batch=batch).order_by("position", "id").select_related("image")
        .prefetch_related(Prefetch("turns", queryset=turns))
    )
    records: list[dict[str, object]] = []
    for conv in conversations:
        conversation_turns: list[dict[str, object]] = []
        record: dict[str, object] = {
            "id": conv.external_id,
            "image": conv.image_name,
            "img_path": conv.metadata.get("img_path", conv.image_name),
            "question": {"role": "user", "value": conv.question},
            "groundtruth": {"role": "user", "value": conv.ground_truth},
            "conversations": conversation_turns,
            "source": conv.source,
            "round": conv.round,
            "score": conv.original_scores,
            "split": conv.split,
        }
        for key, value in (conv.metadata.get("extra") or {}).items():
            record.setdefault(key, value)
        for turn in conv.turns.all():
            entry: dict[str, object] = {"role": turn.role, "type": turn.kind, "value": turn.text}
            rated = list(turn.ratings.all())
            if rated:
                entry["turn"] = turn.index + 1
                entry["human_rating"] = _mean_json([r.score for r in rated if r.score is not None])  # all are
                entry["human_ratings"] = [
                    {"annotator": r.annotator.pseudonym, "score": r.score, "comment": r.comment} for r in rated
                ]
            conversation_turns.append(entry)
        records.append(record)
    return records


# What `export_fire --what` and the FIRE report page's downloads give, by name: (batch, by=, top=) -> Table.
FIRE_TABLES = {
    "table-a1": lambda batch, by="split", top=20: fire_ratings_table(batch),
    "summary": lambda batch, by="split", top=20: fire_rating_summary(batch, by),
    "agreement": lambda batch, by="split", top=20: fire_agreement_table(batch),
    "kappa": lambda batch, by="split", top=20: fire_kappa_table(batch),
    "disagreements": lambda batch, by="split", top=20: fire_disagreements_table(batch, top=top),
    "ratings": lambda batch, by="split", top=20: fire_ratings_long(batch),
}
