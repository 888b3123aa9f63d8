"""FIRE metrics over plain data (no ORM).

Input shapes
- Free dialogue: one sequence of teacher scores per dialogue, ``a_k = [a_k1, ..., a_kt]`` (FIRE's ``score`` field).
- Fixed dialogue: hypotheses ``list[str]`` with references ``list[list[str]]`` (one or more per hypothesis);
  predicted and reference scores as two equal-length number sequences.
- Human ratings: ``(item_id, rater_id, score)`` triples for agreement; ``(group_key, score)`` pairs for means,
  where the key is anything hashable (a split, a source, a turn index, a turn kind, or a tuple of them).
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import krippendorff
import numpy as np
from sacrebleu.metrics import BLEU
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from evaluation.exporters.tables import Cell, Table
from evaluation.metrics import ConfidenceInterval, exact_fraction, percentile_interval, round_half_up

Number = int | float | Fraction
Rating = tuple[Hashable, Hashable, Number]  # (item_id, rater_id, score)

# --- free dialogue: AT, ADR, ATR, RR --------------------------------------------------------------


@dataclass(frozen=True)
class FreeDialogueMetrics:
    average_turn: Fraction | None  # AT, divided by the baseline's AT
    average_dialogue_refinement: Fraction | None  # ADR
    average_turn_refinement: Fraction | None  # ATR
    refinement_ratio: Fraction | None  # RR, a share in [-1, 1]
    dialogues: int  # dialogues the metrics are computed over
    excluded_single_turn: int  # dialogues with one turn, left out of all four metrics


def free_dialogue_metrics(
    dialogues: Iterable[Sequence[Number]],
    *,
    threshold: Number = 8,
    n_max: int = 5,
    punishment: Number = 10,
    at_baseline: Number = 1,
) -> FreeDialogueMetrics:
    """FIRE free-dialogue metrics from each dialogue's teacher scores a_k1..a_kt.

    n_k = t_k when the last score reaches `threshold` within `n_max` turns, else `punishment`;
    AT = mean(n_k) / at_baseline; ADR = mean(a_kt - a_k1); ATR = mean((a_kt - a_k1) / (t_k - 1));
    RR = mean(1[a_kt >= threshold] - 1[a_k1 >= threshold]). Dialogues with t_k = 1 are excluded
    (ATR is undefined for them). Dialogues are taken as recorded: the runner stops them at the threshold.
    """
    threshold_exact = exact_fraction(threshold)
    turns, dialogue_gains, turn_gains, reach_changes = [], [], [], []
    excluded = 0
    for scores in dialogues:
        if not scores:
            raise ValueError("a dialogue needs at least one teacher score")
        first, last, length = exact_fraction(scores[0]), exact_fraction(scores[-1]), len(scores)
        if length == 1:
            excluded += 1
            continue
        solved = last >= threshold_exact
        turns.append(Fraction(length) if solved and length <= n_max else exact_fraction(punishment))
        dialogue_gains.append(last - first)
        turn_gains.append((last - first) / (length - 1))
        reach_changes.append(Fraction(int(solved) - int(first >= threshold_exact)))

    def mean(values: list[Fraction]) -> Fraction | None:
        return sum(values, Fraction(0)) / len(values) if values else None

    average_turn = mean(turns)
    return FreeDialogueMetrics(
        average_turn=None if average_turn is None else average_turn / exact_fraction(at_baseline),
        average_dialogue_refinement=mean(dialogue_gains),
        average_turn_refinement=mean(turn_gains),
        refinement_ratio=mean(reach_changes),
        dialogues=len(turns),
        excluded_single_turn=excluded,
    )


# --- fixed dialogue: BLEU, CIDEr-D, MAE -----------------------------------------------------------


def _check_aligned(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    if any(len(refs) == 0 for refs in references):
        raise ValueError("every hypothesis needs at least one reference")


def bleu_scores(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    max_order: int = 4,
    lowercase: bool = False,
) -> dict[int, float]:
    """Corpus BLEU-1..max_order on sacrebleu's 0-100 scale (13a tokenizer, exp smoothing)."""
    _check_aligned(hypotheses, references)
    # sacrebleu wants reference *streams*; None pads hypotheses that have fewer references.
    width = max(len(refs) for refs in references)
    streams = [[refs[i] if i < len(refs) else None for refs in references] for i in range(width)]
    return {
        order: BLEU(max_ngram_order=order, lowercase=lowercase).corpus_score(list(hypotheses), streams).score
        for order in range(1, max_order + 1)
    }


def caption_tokens(text: str) -> list[str]:
    # Stands in for COCO's Java PTB tokenizer: lower case, punctuation dropped.
    return re.findall(r"\w+", text.lower())


def _ngram_counts(tokens: list[str], max_n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for n in range(1, max_n + 1) for i in range(len(tokens) - n + 1))


def cider_d_per_item(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]], *, max_n: int = 4, sigma: float = 6.0
) -> list[float]:
    """CIDEr-D (Vedantam et al. 2015, the coco-caption `ciderD` variant) for each hypothesis.

    Own implementation (no maintained offline package): tf-idf n-gram vectors with document
    frequencies over the references of this corpus, clipped cosine similarity per n, a Gaussian
    length penalty, averaged over n = 1..max_n and over references, times 10.
    """
    _check_aligned(hypotheses, references)
    hyp_counts = [_ngram_counts(caption_tokens(h), max_n) for h in hypotheses]
    ref_counts = [[_ngram_counts(caption_tokens(r), max_n) for r in refs] for refs in references]
    document_frequency: Counter[tuple[str, ...]] = Counter()
    for refs in ref_counts:
        document_frequency.update({ngram for ref in refs for ngram in ref})
    log_corpus_size = math.log(len(references)) if references else 0.0

    def vectorize(counts: Counter[tuple[str, ...]]) -> tuple[list[dict], list[float], int]:
        vectors: list[dict] = [{} for _ in range(max_n)]
        for ngram, term_frequency in counts.items():
            idf = log_corpus_size - math.log(max(1.0, document_frequency[ngram]))
            vectors[len(ngram) - 1][ngram] = term_frequency * idf
        norms = [math.sqrt(sum(w * w for w in vector.values())) for vector in vectors]
        # coco-caption measures length in bigrams; kept so scores match the reference code.
        length = sum(counts[g] for g in counts if len(g) == 2)
        return vectors, norms, length

    scores = []
    for hyp, refs in zip(hyp_counts, ref_counts, strict=True):
        hyp_vectors, hyp_norms, hyp_length = vectorize(hyp)
        total = 0.0
        for ref in refs:
            ref_vectors, ref_norms, ref_length = vectorize(ref)
            penalty = math.exp(-((hyp_length - ref_length) ** 2) / (2 * sigma**2))
            for n in range(max_n):
                if hyp_norms[n] == 0 or ref_norms[n] == 0:
                    continue
                dot = sum(
                    min(weight, ref_vectors[n].get(g, 0.0)) * ref_vectors[n].get(g, 0.0)
                    for g, weight in hyp_vectors[n].items()
                )
                total += penalty * dot / (hyp_norms[n] * ref_norms[n])
        scores.append(10.0 * total / max_n / len(refs))
    return scores


def cider_d(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]], *, max_n: int = 4, sigma: float = 6.0
) -> float:
    """Corpus CIDEr-D: the mean of `cider_d_per_item`."""
    per_item = cider_d_per_item(hypotheses, references, max_n=max_n, sigma=sigma)
    return sum(per_item) / len(per_item) if per_item else 0.0


def mean_absolute_error(predicted: Sequence[Number], reference: Sequence[Number]) -> Fraction | None:
    """Mean |predicted - reference| of teacher scores; None for no pairs."""
    if len(predicted) != len(reference):
        raise ValueError(f"{len(predicted)} predicted scores but {len(reference)} reference scores")
    if not predicted:
        return None
    errors = [abs(exact_fraction(p) - exact_fraction(r)) for p, r in zip(predicted, reference, strict=True)]
    return sum(errors, Fraction(0)) / len(errors)


# --- human ratings: means with CIs ----------------------------------------------------------------


@dataclass(frozen=True)
class RatingSummary:
    count: int
    mean: Fraction
    ci: ConfidenceInterval | None


def bootstrap_mean_ci(
    scores: Sequence[Number], *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95
) -> ConfidenceInterval | None:
    """Percentile bootstrap CI of the mean, resampling scores with replacement."""
    if not scores:
        return None
    values, counts = np.unique(np.asarray(scores, dtype=float), return_counts=True)
    # Only how often each distinct score is drawn matters: one multinomial per resample is the same
    # bootstrap, at a cost independent of the number of ratings.
    draws = np.random.default_rng(seed).multinomial(len(scores), counts / len(scores), size=n_resamples)
    return percentile_interval(draws @ values / len(scores), confidence)


def summarize_ratings(
    scored: Iterable[tuple[Hashable, Number]],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[Hashable, RatingSummary]:
    """Mean and bootstrap CI of scores grouped by key; keys keep first-seen order."""
    groups: dict[Hashable, list[Number]] = defaultdict(list)
    for key, score in scored:
        groups[key].append(score)
    return {
        key: RatingSummary(
            count=len(scores),
            mean=sum((exact_fraction(s) for s in scores), Fraction(0)) / len(scores),
            ci=bootstrap_mean_ci(scores, n_resamples=n_resamples, seed=seed, confidence=confidence),
        )
        for key, scores in groups.items()
    }


# --- human ratings: agreement ---------------------------------------------------------------------


@dataclass(frozen=True)
class ReliabilityMatrix:
    values: np.ndarray  # raters x items, NaN where a rater did not rate an item
    raters: list[Hashable]
    items: list[Hashable]


def reliability_matrix(ratings: Iterable[Rating]) -> ReliabilityMatrix:
    """Raters x items matrix in first-seen order; one rating per (item, rater)."""
    by_cell: dict[tuple[Hashable, Hashable], float] = {}
    for item_id, rater_id, score in ratings:
        if (item_id, rater_id) in by_cell:
            raise ValueError(f"rater {rater_id!r} rated item {item_id!r} more than once")
        by_cell[(item_id, rater_id)] = float(score)
    items = list(dict.fromkeys(item for item, _ in by_cell))
    raters = list(dict.fromkeys(rater for _, rater in by_cell))
    item_index = {item: i for i, item in enumerate(items)}
    rater_index = {rater: i for i, rater in enumerate(raters)}
    values = np.full((len(raters), len(items)), np.nan)
    for (item_id, rater_id), score in by_cell.items():
        values[rater_index[rater_id], item_index[item_id]] = score
    return ReliabilityMatrix(values, raters, items)


def krippendorff_alpha(
    ratings: Iterable[Rating],
    *,
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "ordinal",
    value_domain: Sequence[Number] | None = None,
) -> float | None:
    """Krippendorff's alpha via the `krippendorff` package; None when it is undefined."""
    matrix = reliability_matrix(ratings)
    if matrix.values.size == 0:
        return None
    try:
        alpha = krippendorff.alpha(
            reliability_data=matrix.values, level_of_measurement=level, value_domain=value_domain
        )
    except ValueError:  # a single distinct value: no variation to agree on
        return None
    return None if math.isnan(alpha) else float(alpha)


def pairwise_weighted_kappa(
    ratings: Iterable[Rating], *, labels: Sequence[int] | None = None, min_shared_items: int = 2
) -> dict[tuple[Hashable, Hashable], float | None]:
    """Quadratic-weighted Cohen's kappa for every rater pair over the items both rated.

    sklearn weighs by label *position*, so the full scale is passed as `labels` (default: every
    integer from the lowest to the highest score seen). None: fewer than `min_shared_items` shared
    items, or kappa undefined (both raters constant).
    """
    matrix = reliability_matrix(ratings)
    observed = matrix.values[~np.isnan(matrix.values)]
    if labels is None and observed.size:
        if not np.all(observed == np.round(observed)):
            raise ValueError("weighted kappa needs integer scores, or pass labels")
        labels = list(range(int(observed.min()), int(observed.max()) + 1))
    elif labels is not None and not set(observed.tolist()) <= set(labels):
        # sklearn would silently drop scores outside `labels`
        raise ValueError(
            f"scores {sorted(set(observed.tolist()) - set(labels))} are not among labels {list(labels)}"
        )
    result: dict[tuple[Hashable, Hashable], float | None] = {}
    for a, b in itertools.combinations(range(len(matrix.raters)), 2):
        both = ~np.isnan(matrix.values[a]) & ~np.isnan(matrix.values[b])
        kappa = None
        if both.sum() >= min_shared_items:
            # Undefined kappa (both raters constant) comes back as NaN, reported as None below.
            with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                value = cohen_kappa_score(
                    matrix.values[a, both].astype(int),
                    matrix.values[b, both].astype(int),
                    labels=labels,
                    weights="quadratic",
                )
            kappa = None if math.isnan(value) else float(value)
        result[(matrix.raters[a], matrix.raters[b])] = kappa
    return result


@dataclass(frozen=True)
class ItemDisagreement:
    item_id: Hashable
    scores: dict[Hashable, float]  # rater -> score
    spread: float  # max - min
    std: float  # population standard deviation


def disagreement_items(ratings: Iterable[Rating], *, top: int = 10) -> list[ItemDisagreement]:
    """Items with at least two ratings, most disputed first (spread, then std), for adjudication."""
    matrix = reliability_matrix(ratings)
    found = []
    for column, item_id in enumerate(matrix.items):
        rated = ~np.isnan(matrix.values[:, column])
        if rated.sum() < 2:
            continue
        scores = matrix.values[rated, column]
        raters = [rater for rater, is_rated in zip(matrix.raters, rated, strict=True) if is_rated]
        found.append(
            ItemDisagreement(
                item_id=item_id,
                scores=dict(zip(raters, scores.tolist(), strict=True)),
                spread=float(scores.max() - scores.min()),
                std=float(scores.std()),
            )
        )
    found.sort(key=lambda d: (-d.spread, -d.std))  # stable: ties keep first-seen order
    return found[:top]


# --- FIRE Table A1 --------------------------------------------------------------------------------

TurnKind = Literal["feedback", "response"]


def fire_rating_table(
    ratings: Iterable[tuple[str, TurnKind, Number]],
    *,
    splits: Sequence[str] | None = None,
    digits: int = 2,
    n_resamples: int = 2000,
    seed: int = 0,
    title: str = "Human ratings (1-5) of FIRE teacher feedback and student responses",
) -> Table:
    """Table A1 layout: per split the mean feedback and response rating with 95% CIs, then "All".

    `ratings` are ``(split, turn_kind, score)`` with turn_kind "feedback" or "response".
    """
    ratings = list(ratings)
    for _, kind, _ in ratings:
        if kind not in ("feedback", "response"):
            raise ValueError(f"turn kind must be 'feedback' or 'response', got {kind!r}")
    summaries = summarize_ratings(
        (((split, kind), score) for split, kind, score in ratings), n_resamples=n_resamples, seed=seed
    )
    summaries |= summarize_ratings(
        (((None, kind), score) for _, kind, score in ratings), n_resamples=n_resamples, seed=seed
    )
    split_order = list(splits) if splits is not None else list(dict.fromkeys(s for s, _, _ in ratings))

    def cells(split: str | None, kind: TurnKind) -> list[Cell]:
        summary = summaries.get((split, kind))
        if summary is None:
            return [0, None, None]
        ci = summary.ci
        ci_text = f"[{round_half_up(ci.low, digits)}, {round_half_up(ci.high, digits)}]" if ci else None
        return [summary.count, round_half_up(summary.mean, digits), ci_text]

    row_keys: list[tuple[str, str | None]] = [(split, split) for split in split_order]
    if len(split_order) > 1:
        row_keys.append(("All", None))
    rows = [[label, *cells(key, "feedback"), *cells(key, "response")] for label, key in row_keys]
    return Table(
        title=title,
        columns=[
            "Split",
            "#Feedback",
            "Feedback",
            "Feedback 95% CI",
            "#Response",
            "Response",
            "Response 95% CI",
        ],
        rows=rows,
        notes=[
            f"Mean rating; 95% CI by percentile bootstrap over ratings ({n_resamples} resamples, seed {seed}).",
        ],
    )
