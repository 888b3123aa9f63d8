"""FIRE metrics over plain data (no ORM).

Input shapes
- Free dialogue: one sequence of teacher scores per dialogue, ``a_k = [a_k1, ..., a_kt]`` (FIRE's ``score`` field);
  ``None`` for a teacher answer whose score could not be parsed.
- Fixed dialogue: hypotheses ``list[str]`` with references ``list[list[str]]`` (one or more per hypothesis);
  predicted and reference scores as two equal-length sequences (``None`` for a score that cannot be read).
- Human ratings: their means, agreement and tables are in evaluation.fire.rating_metrics.

Decisions (FIRE, Li et al. 2024, §3.4.1 quoted; docs/decisions/fire-metrics.md says the same)
FIRE's repository (github.com/MM-FIRE/FIRE) has the fixed-dialogue evaluation (``llava/eval/eval_feedback.py``,
``analyze_feedback.py``) and a free-dialogue runner (``llava/eval/model_fire_chat_loader.py``), but not the
computation of AT, ADR, ATR and RR: those follow the paper's formulas.

1. Threshold: >= 8. §3.4.1's prose says dialogues stop when the scores "exceed a pre-defined threshold (we set 8
   in experiments)" and §5.5 speaks of "scores greater than 8", but Eq. 4 counts 1[a >= 8], §3.3 stops data
   generation "if the score a in the feedback a >= 8", and the official runner stops at ``scores[-1] >= 8``. The
   formula and the code agree, so a score of exactly 8 solves.
2. n_k: "the number of turns n_k in the conversation to solve the k-th data, where VLMs refine their responses
   until the obtained score exceeds the pre-defined threshold [...] If VLMs fail to obtain a satisfactory score
   in n_max turns, then n_k = p" (p = 10, n_max = 5): the first turn reaching 8 within n_max turns, else p.
   Scores after the first reaching one do not matter ([3, 9, 5] and [3, 8, 10] both give 2).
3. Removal: "if n_k = 1, we remove it from the K samples to compute AT, ADR, ATR, and RR" -- by n_k, not by
   dialogue length ([8, 5] is removed; a one-turn dialogue that does not reach 8 is kept with n_k = p).
4. Final turn: a_{k,n_k} is "the obtained score for the response in the final turn". A solved dialogue ends at
   turn n_k (the protocol stops there); an unsolved one (n_k = p, no such turn) at its last turn, at most n_max.
   ADR = mean(a_end - a_1) (Eq. 2), ATR = mean((a_end - a_1) / (end - 1)) (Eq. 3, with the turns the dialogue
   took), RR = mean(1[a_end >= 8] - 1[a_1 >= 8]) (Eq. 4). After rule 3, a_1 < 8 always, so RR is the share
   solved.
5. Missing score (not in the paper): FIRE's runner sets a score it cannot read to 0 and stops the dialogue there;
   the app stops too (annotate.bench.fire_engine.dialogue_ended) but stores no score (None), so that a table can
   tell "unreadable" from a real 0. None never reaches the threshold but the turn counts for n_k; ADR/ATR/RR take
   the first and last *scored* turns up to the end (ATR divides by the turns between them). A dialogue with
   fewer than two scored turns there counts in AT only, so ``refinement_dialogues`` (ADR/ATR/RR) can be smaller
   than ``dialogues`` (AT).
6. MAE: the official code reads scores with ``get_score`` (the first line must contain "Score:"; the first
   whole number on it; annotate.bench.fire_parsing) and marks one it cannot read -1, predicted or reference alike;
   then ``diff = np.abs(preds_scores - labels_scores)``; ``diff[preds_scores==-1] = 10``; it prints
   ``np.sum(preds_scores==-1)`` as "Failed to follow count" (Table 3's count of unparseable scores), and skips
   conversations whose id is in ``data/ignore_ids.json`` (so does ``analyze_student``). Here: ``punishment``
   (10) is the error of a ``None`` prediction whatever the reference, a ``None`` reference is compared as -1
   (``unparsed_reference``: |7 - (-1)| = 8), ``unparseable`` counts the predictions, ``ignored_ids`` skips pairs
   by id; a run's ``ignored_ids`` leave conversations out of all its tables (evaluation.fire.runs).
7. BLEU / CIDEr: the official ``capeval`` is pycocoevalcap's ``Bleu`` and ``Cider`` (CIDEr-D: clipped counts,
   Gaussian length penalty, document frequency from the references of the corpus scored), called on raw text,
   which both split on whitespace (``s.split()``): case and punctuation stay in the tokens (no PTB tokenizer).
   BLEU-n is ``compute_score(...)[1]`` averaged over sentences (``score.mean(axis=1)``), not corpus BLEU, on
   0-1. CIDEr-D is the mean of per-item scores, on pycocoevalcap's scale (x10: identical text scores up to 10).
   sacrebleu's corpus BLEU (0-100) is an extra, labelled column, never the paper's.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from evaluation.stats import exact_fraction

Number = int | float | Fraction
Rating = tuple[Hashable, Hashable, Number]  # (item_id, rater_id, score)

# --- free dialogue: AT, ADR, ATR, RR (decisions 1-5) ------------------------------------------------------


@dataclass(frozen=True)
class FreeDialogueMetrics:
    average_turn: Fraction | None  # AT, divided by the baseline's AT
    average_dialogue_refinement: Fraction | None  # ADR
    average_turn_refinement: Fraction | None  # ATR
    refinement_ratio: Fraction | None  # RR, a share in [0, 1] once n_k = 1 samples are removed
    dialogues: int  # dialogues AT is computed over
    refinement_dialogues: int  # dialogues ADR, ATR and RR are computed over (two scored turns up to the end)
    excluded_solved_at_first_turn: int  # dialogues with n_k = 1, left out of all four metrics


def satisfying_turn(scores: Sequence[Number | None], *, threshold: Number = 8, n_max: int = 5) -> int | None:
    """The first turn (1-based) whose score reaches `threshold` within `n_max` turns; None if there is none."""
    limit = exact_fraction(threshold)
    for turn, score in enumerate(scores[:n_max], start=1):
        if score is not None and exact_fraction(score) >= limit:
            return turn
    return None


def free_dialogue_metrics(
    dialogues: Iterable[Sequence[Number | None]],
    *,
    threshold: Number = 8,
    n_max: int = 5,
    punishment: Number = 10,
    at_baseline: Number = 1,
) -> FreeDialogueMetrics:
    """FIRE free-dialogue metrics from each dialogue's teacher scores (module docstring, decisions 1-5).

    n_k = first turn reaching `threshold` within `n_max`, else `punishment`; samples with n_k = 1 are removed.
    AT = mean(n_k) / at_baseline. The dialogue ends at n_k when solved, else at min(t_k, n_max); between its
    first and last scored turns up to there: ADR = mean(gain), ATR = mean(gain / turns between), RR = mean of
    1[last >= threshold] - 1[first >= threshold].
    """
    if n_max < 1:
        raise ValueError(f"n_max must be at least 1, got {n_max}")
    if exact_fraction(at_baseline) <= 0:
        raise ValueError(f"at_baseline must be positive, got {at_baseline}")
    limit = exact_fraction(threshold)
    turns, dialogue_gains, turn_gains, reach_changes = [], [], [], []
    excluded = 0
    for index, scores in enumerate(dialogues):
        if not scores:
            raise ValueError(f"dialogue {index} has no turns")
        solved_at = satisfying_turn(scores, threshold=threshold, n_max=n_max)
        if solved_at == 1:
            excluded += 1
            continue
        turns.append(exact_fraction(punishment) if solved_at is None else Fraction(solved_at))
        end = solved_at if solved_at is not None else min(len(scores), n_max)
        scored = [(turn, exact_fraction(s)) for turn, s in enumerate(scores[:end], start=1) if s is not None]
        if len(scored) < 2:  # decision 5: no refinement to measure
            continue
        (first_turn, first), (last_turn, last) = scored[0], scored[-1]
        dialogue_gains.append(last - first)
        turn_gains.append((last - first) / (last_turn - first_turn))
        reach_changes.append(Fraction(int(last >= limit) - int(first >= limit)))

    def mean(values: list[Fraction]) -> Fraction | None:
        return sum(values, Fraction(0)) / len(values) if values else None

    average_turn = mean(turns)
    return FreeDialogueMetrics(
        average_turn=None if average_turn is None else average_turn / exact_fraction(at_baseline),
        average_dialogue_refinement=mean(dialogue_gains),
        average_turn_refinement=mean(turn_gains),
        refinement_ratio=mean(reach_changes),
        dialogues=len(turns),
        refinement_dialogues=len(dialogue_gains),
        excluded_solved_at_first_turn=excluded,
    )


# --- fixed dialogue: BLEU, CIDEr-D (decision 7), MAE (decision 6) ---------------------------------------


def _check_aligned(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    for index, refs in enumerate(references):
        if len(refs) == 0:
            raise ValueError(f"hypothesis {index} has no reference")


def _coco_inputs(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]]
) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    # pycocoevalcap takes id -> [hypothesis] and id -> references; ids in input order, as the official code.
    _check_aligned(hypotheses, references)
    return dict(enumerate(list(refs) for refs in references)), {i: [h] for i, h in enumerate(hypotheses)}


def bleu_scores(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> dict[int, float] | None:
    """BLEU-1..4 as FIRE's Table 3: pycocoevalcap's per-sentence BLEU averaged over sentences, on 0-1.

    Raw text split on whitespace; the closest reference length for the brevity penalty. None for no items.
    """
    gts, res = _coco_inputs(hypotheses, references)
    if not res:
        return None
    from pycocoevalcap.bleu.bleu import (
        Bleu,  # imported here: start-up of commands and pages that score nothing
    )

    _, per_sentence = Bleu(4).compute_score(gts, res, verbose=0)
    return {order: float(np.mean(scores)) for order, scores in enumerate(per_sentence, start=1)}


def cider_d_per_item(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """pycocoevalcap's CIDEr-D of each hypothesis; idf comes from the references of this whole corpus."""
    gts, res = _coco_inputs(hypotheses, references)
    if not res:
        return []
    if not any(ref.split() for refs in references for ref in refs):
        # pycocoevalcap would fail on max() of no document frequencies
        raise ValueError("every reference is empty: CIDEr-D needs reference n-grams")
    from pycocoevalcap.cider.cider import Cider

    _, per_item = Cider().compute_score(gts, res)
    return [float(score) for score in per_item]


def cider_d(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float | None:
    """Corpus CIDEr-D as FIRE's Table 3: the mean of `cider_d_per_item`; None for no items."""
    per_item = cider_d_per_item(hypotheses, references)
    return float(np.mean(per_item)) if per_item else None


def sacrebleu_corpus_bleu(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    max_order: int = 4,
    lowercase: bool = False,
) -> dict[int, float]:
    """Extra column, not the paper's: sacrebleu corpus BLEU-1..max_order on 0-100 (13a tokenizer, exp smoothing)."""
    from sacrebleu.metrics import BLEU

    _check_aligned(hypotheses, references)
    # sacrebleu wants reference *streams*; None pads hypotheses that have fewer references.
    width = max((len(refs) for refs in references), default=0)
    streams = [[refs[i] if i < len(refs) else None for refs in references] for i in range(width)]
    return {
        # sacrebleu documents None padding for missing references but annotates the streams as str only
        order: BLEU(max_ngram_order=order, lowercase=lowercase).corpus_score(list(hypotheses), streams).score  # type: ignore[arg-type]
        for order in range(1, max_order + 1)
    }


@dataclass(frozen=True)
class MeanAbsoluteError:
    value: Fraction | None  # MAE over the pairs kept; None for none
    pairs: int  # pairs kept (ignored ones left out)
    unparseable: int  # kept pairs whose predicted score was None, each an error of `punishment`
    ignored: int  # pairs skipped because their id is in `ignored_ids`
    unparseable_references: int = 0  # kept pairs whose reference score was None, compared as -1


def mean_absolute_error(
    predicted: Sequence[Number | None],
    reference: Sequence[Number | None],
    *,
    punishment: Number = 10,
    unparsed_reference: Number = -1,
    ids: Sequence[Hashable] | None = None,
    ignored_ids: Collection[Hashable] = (),
) -> MeanAbsoluteError:
    """MAE of teacher scores as FIRE's ``analyze_teacher`` (decision 6).

    A None prediction is an error of `punishment` whatever the reference; a None reference is compared as
    `unparsed_reference` (the official code's -1); pairs whose id (``ids[i]``) is in `ignored_ids` are skipped.
    """
    if len(predicted) != len(reference):
        raise ValueError(f"{len(predicted)} predicted scores but {len(reference)} reference scores")
    if ids is not None and len(ids) != len(predicted):
        raise ValueError(f"{len(predicted)} scores but {len(ids)} ids")
    if ignored_ids and ids is None:
        raise ValueError("ignored_ids needs ids, one per score pair")
    errors: list[Fraction] = []
    unparseable = unparseable_references = ignored = 0
    for index, (guess, truth) in enumerate(zip(predicted, reference, strict=True)):
        if ids is not None and ids[index] in ignored_ids:
            ignored += 1
            continue
        if truth is None:
            unparseable_references += 1
            truth = unparsed_reference
        if guess is None:
            unparseable += 1
            errors.append(exact_fraction(punishment))
        else:
            errors.append(abs(exact_fraction(guess) - exact_fraction(truth)))
    return MeanAbsoluteError(
        value=sum(errors, Fraction(0)) / len(errors) if errors else None,
        pairs=len(errors),
        unparseable=unparseable,
        ignored=ignored,
        unparseable_references=unparseable_references,
    )
