"""Preference reports: plain rows (``preference_selectors``) → ``preference_metrics`` → tables, JSON and exports.

The researcher page, the API and the downloads all call ``preference_report(batch)``; one report has four tables:

- ``pairs``: per (model A, model B) the wins, ties and losses of A and A's win rate with a 95% bootstrap CI
- ``agreement``: agreement on comparisons judged by two or more raters, for all raters and per rater
- ``kappa``: per rater pair, observed agreement and quadratic-weighted Cohen's kappa
- ``scores``: per model the mean helpfulness, faithfulness and ethics (1-5) with 95% bootstrap CIs
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal

from annotate.errors import ApplicationError, NotFound
from annotate.models import Batch
from annotate.rating.preference.services import DIMENSIONS
from annotate.rating.selectors import DIMENSION_NAMES
from annotate.wording import phrase, phrase_in
from evaluation.exports.registry import CONTENT_TYPES, Export, export_filename
from evaluation.exports.renderers.tables import render, to_json
from evaluation.fire.rating_metrics import summarize_ratings
from evaluation.preference.metrics import (
    MIN_SHARED_FOR_KAPPA,
    name_key,
    pair_judgments,
    pairwise_win_rates,
    preference_agreement,
)
from evaluation.preference.selectors import MODELS_FIELD, CandidateScore, PreferenceData, preference_data
from evaluation.stats import ConfidenceInterval, percent, round_half_up
from evaluation.table import Table

PREFERENCE_FORMATS = ("csv", "md", "json", "tex")
PREFERENCE_TABLES = ("pairs", "agreement", "kappa", "scores")
# The raw judgments, batch exports of their own (evaluation.preference.records): name -> formats
# (zip: the JSON lines with their images, Parquet and the dataset card; parquet: the images inside)
RAW_EXPORTS = (("preference-responses", ("zip", "parquet", "jsonl", "csv")),
               ("preference-dpo", ("zip", "parquet", "jsonl")))
LEFT_OUT_SHOWN = 5


@dataclass
class PreferenceReport:
    batch: Batch
    data: PreferenceData
    pairs: Table
    agreement: Table
    kappa: Table
    scores: Table

    def tables(self) -> dict[str, Table]:
        return {name: getattr(self, name) for name in PREFERENCE_TABLES}

    def as_dict(self) -> dict:
        """The whole report as JSON-ready data (the API's answer, less the links)."""
        return {
            "batch": {"id": self.batch.id, "name": self.batch.name, "kind": self.batch.kind},
            "labelled_by": self.data.labelled_by,
            "conversations": self.data.conversations,
            "rankings": self.data.rankings,
            "raters": self.data.raters,
            "left_out": [{"conversation": c, "why": why} for c, why in self.data.left_out],
            "tables": {name: json.loads(to_json(table)) for name, table in self.tables().items()},
        }


def _3(value: float | None) -> Decimal | None:
    return None if value is None else round_half_up(value, 3)


def _bounds(ci: ConfidenceInterval | None, digits: int = 2) -> list[Decimal | None]:
    """A CI as two numbers (low, high), each its own column: None (empty in CSV) when undefined."""
    return [round_half_up(ci.low, digits), round_half_up(ci.high, digits)] if ci else [None, None]


def _source_notes(data: PreferenceData) -> list[str]:
    notes: list[str] = []
    if data.labelled_by == "positions":
        notes.append(phrase("Candidates are compared by position (Candidate 1 = each record's first response): the "
                            "records name no models (add a %(field)s list, one name per response, to compare "
                            "models).", field=repr(MODELS_FIELD)))
    if data.left_out:
        listed = "; ".join(f"{c}: {why}" for c, why in data.left_out[:LEFT_OUT_SHOWN])
        if len(data.left_out) > LEFT_OUT_SHOWN:
            notes.append(phrase("%(n)s rated conversation(s) left out (%(listed)s and %(more)s more).",
                                n=len(data.left_out), listed=listed, more=len(data.left_out) - LEFT_OUT_SHOWN))
        else:
            notes.append(phrase("%(n)s rated conversation(s) left out (%(listed)s).", n=len(data.left_out),
                                listed=listed))
    return notes


MODEL_ORDER_NOTE = phrase("Models are ordered by name (numbers in a name compared as numbers).")
ORIENTATION_NOTE = phrase("Models are ordered by name (numbers in a name compared as numbers): Model A is the first "
                          "of each pair in that order, whatever order the records or their candidates came in.")


def _pairs_table(batch: Batch, data: PreferenceData, pairs, *, n_resamples: int, seed: int) -> Table:
    rows = [
        [r.model_a, r.model_b, r.items, r.judgments, r.wins, r.ties, r.losses, percent(r.win_rate),
         percent(r.ci.low) if r.ci else None, percent(r.ci.high) if r.ci else None]
        for r in pairwise_win_rates(pairs, n_resamples=n_resamples, seed=seed)
    ]
    return Table(
        title=phrase("Pairwise preferences (win / tie / loss) — %(batch)s", batch=batch.name),
        columns=[phrase("Model A"), phrase("Model B"), phrase_in("report table column", "Items"), phrase("Judgments"),
                 phrase("A wins"), phrase("Ties"), phrase("B wins"), phrase("A win rate (%)"), phrase("95% CI low (%)"),
                 phrase("95% CI high (%)")],
        rows=rows,
        notes=[
            phrase("Each final ranking gives one judgment per pair of its candidates (an item rated by K raters "
                   "counts K times). A win rate = (A wins + ties / 2) / judgments; B's win rate is 100 minus A's."),
            ORIENTATION_NOTE,
            phrase("95%% CI by percentile bootstrap over items: an item's judgments are resampled together "
                   "(%(n)s resamples, seed %(seed)s, items in the order of their ids).", n=n_resamples, seed=seed),
            *_source_notes(data),
        ],
    )


CODING_NOTE = phrase("A comparison is one pair of an item's candidates (two models), coded +1 (Model A preferred), 0 "
                     "(tie) or -1 (Model B preferred), A and B in the order of the pairs table. Alpha and kappa count "
                     "every comparison twice, as coded and mirrored (B against A, the code negated), so they do not "
                     "depend on which model is called A; observed agreement counts it once.")


def _agreement_tables(batch: Batch, pairs) -> tuple[Table, Table]:
    agreement = preference_agreement(pairs)
    defined = [p.kappa for p in agreement.per_pair if p.kappa is not None]
    rows = [[phrase("All raters"), agreement.items, agreement.rater_pairs_compared, percent(agreement.agreement),
             _3(agreement.alpha_ordinal), _3(sum(defined) / len(defined) if defined else None)]]
    rows += [[str(r.rater), r.items, r.comparisons, percent(r.agreement), None, _3(r.mean_kappa)]
             for r in agreement.per_rater]
    summary = Table(
        title=phrase("Rater agreement on pairwise preferences — %(batch)s", batch=batch.name),
        columns=[phrase("Rater"), phrase_in("report table column", "Items"), phrase("Comparisons"),
                 phrase("Agreement (%)"), phrase("Alpha (ordinal)"), phrase("Mean pairwise kappa")],
        rows=rows,
        notes=[
            phrase("Only comparisons judged by two or more raters count; outcomes are ordered A preferred > tie > "
                   "B preferred."),
            CODING_NOTE,
            phrase("All raters: Comparisons = (comparison, pair of its raters); Agreement = the share with the same "
                   "outcome; Krippendorff's alpha (ordinal, krippendorff package). Per rater: their judgments "
                   "against each other rater's judgment of the same comparison; mean of their pairwise kappas. "
                   "Raters by pseudonym, in order."),
        ],
    )
    kappa = Table(
        title=phrase("Pairwise rater agreement on preferences — %(batch)s", batch=batch.name),
        columns=[phrase("Rater A"), phrase("Rater B"), phrase("Shared comparisons"), phrase("Agreement (%)"),
                 phrase("Kappa")],
        rows=[[str(p.rater_a), str(p.rater_b), p.shared, percent(p.agreement), _3(p.kappa)]
              for p in agreement.per_pair],
        notes=[phrase("Cohen's kappa with quadratic weights over B preferred / tie / A preferred (scikit-learn), "
                      "every comparison counted as coded and mirrored (see the agreement table). Undefined (empty in "
                      "CSV, '-' in Markdown and LaTeX, null in JSON): fewer than %(n)s shared comparisons, or one "
                      "rater gave a single outcome throughout.", n=MIN_SHARED_FOR_KAPPA)],
    )
    return summary, kappa


def _scores_table(batch: Batch, data: PreferenceData, *, n_resamples: int, seed: int) -> Table:
    scores = sorted(data.scores, key=_score_key)
    summaries = {
        # (label, score, item): the CI resamples items, since the raters of one item score the same responses.
        d: summarize_ratings(((s.label, s.value(d), s.item) for s in scores if s.value(d) is not None),
                             n_resamples=n_resamples, seed=seed)
        for d in DIMENSIONS
    }
    rows = []
    for label in sorted({s.label for s in data.scores}, key=name_key):
        counts = [summaries[d][label].count for d in DIMENSIONS if label in summaries[d]]
        if not counts:
            continue
        row: list = [label, max(counts)]
        for d in DIMENSIONS:
            summary = summaries[d].get(label)
            row += [round_half_up(summary.mean, 2), *_bounds(summary.ci)] if summary else [None, None, None]
        rows.append(row)
    columns: list[str] = [phrase_in("report table column", "Model"), phrase("Ratings")]
    for d in DIMENSIONS:
        name = DIMENSION_NAMES[d]
        columns += [name, phrase("%(dimension)s 95%% CI low", dimension=name),
                    phrase("%(dimension)s 95%% CI high", dimension=name)]
    return Table(
        title=phrase("Candidate scores (1-5) per model — %(batch)s", batch=batch.name),
        columns=columns,
        rows=rows,
        notes=[phrase("Mean of final ratings (two decimals, rounded half up); 95%% CI by percentile bootstrap over "
                      "items: all ratings of an item's responses are resampled together, since several raters score "
                      "the same responses (%(n)s resamples, seed %(seed)s).", n=n_resamples, seed=seed),
               MODEL_ORDER_NOTE, *_source_notes(data)],
    )


def _score_key(score: CandidateScore) -> tuple:
    return name_key(score.item), name_key(score.rater), name_key(score.label)


def preference_report(batch: Batch, *, n_resamples: int = 2000, seed: int = 0) -> PreferenceReport:
    """The batch's preference report (a 400 for a batch of another kind; empty tables before any ranking)."""
    data = preference_data(batch)
    pairs = pair_judgments(data.judgments)
    agreement, kappa = _agreement_tables(batch, pairs)
    return PreferenceReport(
        batch=batch, data=data,
        pairs=_pairs_table(batch, data, pairs, n_resamples=n_resamples, seed=seed),
        agreement=agreement, kappa=kappa,
        scores=_scores_table(batch, data, n_resamples=n_resamples, seed=seed),
    )


def check_preference_export(name: str, fmt: str) -> None:
    """Unknown table → NotFound (404); a format it does not have → ApplicationError (400)."""
    if name not in PREFERENCE_TABLES:
        raise NotFound(f"Unknown preference table {name!r}; expected one of {', '.join(PREFERENCE_TABLES)}.")
    if fmt not in PREFERENCE_FORMATS:
        raise ApplicationError(f"Unknown format {fmt!r} for {name}; expected one of {', '.join(PREFERENCE_FORMATS)}.",
                               code="bad_format")


def preference_table(batch: Batch, name: str) -> Table:
    """One table of the report (a 400 before any final ranking): what the batch exports ``preference-<name>``."""
    report = preference_report(batch)
    if not report.data.rankings:
        raise ApplicationError(f"Batch {batch.name!r} has no final rankings to report yet.", code="no_rankings")
    return report.tables()[name]


def preference_export(batch: Batch, name: str, fmt: str) -> Export:
    """One table of the report as a file (csv, md, json or tex), byte for byte the batch's ``preference-<name>``
    export."""
    check_preference_export(name, fmt)
    return Export(export_filename(batch, f"preference-{name}", fmt), CONTENT_TYPES[fmt],
                  render(preference_table(batch, name), fmt).encode())
