"""FIRE's Tables 2-5 from a FIRE run of the app (fixed and free dialogues), with the metric functions of
evaluation.fire.metrics (the paper's definitions; decisions in its docstring). Conversations whose id is in the
run's ``ignored_ids`` are left out of every table, as FIRE's official analysis skips its ``data/ignore_ids.json``."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from django.db.models import QuerySet

from annotate.bench.fire_parsing import UNPARSED_SCORE, fixed_dialogue_reading
from annotate.bench.selectors import run_providers, run_receivers
from annotate.models import BenchRun, Conversation, FireRunTurn
from annotate.wording import phrase, phrase_in
from evaluation.fire.metrics import bleu_scores, cider_d, free_dialogue_metrics, mean_absolute_error
from evaluation.stats import round_half_up
from evaluation.table import Cell, Table

DIGITS = 2


def _number(value: float | Fraction | None, digits: int = DIGITS) -> Decimal | None:
    return None if value is None else round_half_up(value, digits)


def _turns(run: BenchRun) -> QuerySet[FireRunTurn]:
    """The run's turns, without the conversations it ignores."""
    return FireRunTurn.objects.filter(run=run).exclude(conversation__external_id__in=run.ignored_ids)


def _ignored_note(run: BenchRun) -> list[str]:
    if not run.ignored_ids:
        return []
    left_out = Conversation.objects.filter(batch=run.batch, external_id__in=run.ignored_ids).count()
    return [phrase("Left out: %(left_out)s conversation(s) of the %(ids)s id(s) the run ignores.", left_out=left_out,
                   ids=len(run.ignored_ids))]


def _text_scores(hypotheses: list[str], references: list[str]) -> list[Decimal | None]:
    """BLEU-1..4 and CIDEr-D (pycocoevalcap, as FIRE's official code), one reference per hypothesis."""
    if not hypotheses:
        return [None] * 5
    refs = [[r] for r in references]
    bleu = bleu_scores(hypotheses, refs) or {}
    return [_number(bleu.get(n)) for n in (1, 2, 3, 4)] + [_number(cider_d(hypotheses, refs))]


TEXT_SCORE_COLUMNS = ["BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "CIDEr"]  # metric names: the same in every language


def student_table(run: BenchRun) -> Table:
    """Table 2: each student's responses in fixed dialogues against the recorded ones."""
    rows: list[list[Cell]] = []
    for student in run_receivers(run):
        turns = list(_turns(run).filter(student=student, role="student", teacher__isnull=True)
                     .order_by("conversation_id", "number"))
        rows.append([student.label, len(turns), *_text_scores([t.text for t in turns],
                                                               [t.reference_text for t in turns])])
    return Table(title=phrase("FIRE fixed dialogues: students (Table 2), run %(run)s on %(batch)s", run=run.pk,
                              batch=run.batch.name),
                 columns=[phrase("Student"), phrase("Turns"), *TEXT_SCORE_COLUMNS], rows=rows,
                 notes=[phrase("BLEU-1..4 and CIDEr-D as pycocoevalcap computes them on whitespace-split raw text "
                               "(BLEU on 0-1; CIDEr-D on its own scale), against the recorded student responses."),
                        *_ignored_note(run)])


def teacher_table(run: BenchRun) -> Table:
    """Table 3: each teacher's feedback and scores in fixed dialogues against the recorded ones, both read as
    FIRE's ``eval_feedback_teacher`` reads them (annotate.bench.fire_parsing): from the stored texts, so the
    table is the official reading whatever a run stored."""
    rows: list[list[Cell]] = []
    references_unread = 0
    for teacher in run_providers(run):
        turns = list(_turns(run).filter(teacher=teacher, role="teacher", student__isnull=True)
                     .order_by("conversation_id", "number"))
        made = [fixed_dialogue_reading(t.text) for t in turns]
        recorded = [fixed_dialogue_reading(t.reference_text) for t in turns]
        mae = mean_absolute_error([m.score for m in made], [r.score for r in recorded],
                                  unparsed_reference=UNPARSED_SCORE)
        references_unread = max(references_unread, mae.unparseable_references)
        rows.append([teacher.label, len(turns),
                     *_text_scores([m.feedback for m in made], [r.feedback for r in recorded]),
                     _number(mae.value), mae.unparseable])
    notes = [phrase("Scores and feedback read as FIRE's get_score / get_feedback: the first line must contain "
                    "'Score:' (exactly so) and the score is its first whole number (7.5 gives 7, 12 stays 12); the "
                    "feedback follows 'Feedback:'. If either cannot be read, the score is unparseable and the feedback "
                    "empty (FIRE's eval_feedback_teacher). MAE: an unparseable score is an error of 10 (FIRE's "
                    "analyze_teacher)."),
             *_ignored_note(run)]
    if references_unread:
        notes.append(phrase("Unparseable reference scores: %(n)s recorded teacher turn(s) have none; as FIRE's code, "
                            "they are compared as -1 (and their feedback as empty).", n=references_unread))
    return Table(title=phrase("FIRE fixed dialogues: teachers (Table 3), run %(run)s on %(batch)s", run=run.pk,
                              batch=run.batch.name),
                 columns=[phrase("Teacher"), phrase("Turns"), *TEXT_SCORE_COLUMNS, "MAE",
                          phrase("Unparseable scores")], rows=rows, notes=notes)


def _dialogue_scores(run: BenchRun) -> dict[tuple[int, int], dict[int, tuple[str, list[float | None]]]]:
    """(student id, teacher id) -> conversation id -> (its source, the teacher's scores in turn order)."""
    dialogues: dict[tuple[int, int], dict[int, tuple[str, list[float | None]]]] = {}
    for student, teacher, conversation, source, score in _turns(run).filter(role="teacher").order_by(
            "conversation_id", "number").values_list(
            "student_id", "teacher_id", "conversation_id", "conversation__source", "score"):
        dialogues.setdefault((student, teacher), {}).setdefault(conversation, (source, []))[1].append(score)
    return dialogues


def free_tables(run: BenchRun) -> tuple[Table, Table]:
    """Table 4 (AT relative to the baseline student with the same teacher, ADR, ATR, RR) and Table 5 (per
    source dataset)."""
    dialogues = _dialogue_scores(run)
    students = {m.pk: m for m in run_receivers(run)}
    teachers = run_providers(run)
    baseline = next((m for m in students.values() if m.name == run.baseline), None)
    settings = {"threshold": run.threshold, "n_max": run.n_max}

    def metrics(scores: list[list[float | None]], at_baseline: Fraction | None) -> list[Cell]:
        raw = free_dialogue_metrics(scores, **settings) if scores else None
        if raw is None:
            return [None] * 4
        at = raw.average_turn / at_baseline if raw.average_turn is not None and at_baseline else None
        return [_number(at), _number(raw.average_dialogue_refinement), _number(raw.average_turn_refinement),
                _number(raw.refinement_ratio)]

    def baseline_at(teacher_id: int, source: str | None = None) -> Fraction | None:
        if baseline is None:
            return None
        scores = [s for src, s in dialogues.get((baseline.pk, teacher_id), {}).values() if source in (None, src)]
        return free_dialogue_metrics(scores, **settings).average_turn if scores else None

    overall: list[list[Cell]] = []
    by_source: list[list[Cell]] = []
    for teacher in teachers:
        for student in students.values():
            mine = dialogues.get((student.pk, teacher.pk), {})
            overall.append([student.label, teacher.label, len(mine),
                            *metrics([s for _, s in mine.values()], baseline_at(teacher.pk))])
            for source in sorted({src for src, _ in mine.values()}):
                scores = [s for src, s in mine.values() if src == source]
                by_source.append([source or "-", student.label, teacher.label, len(scores),
                                  *metrics(scores, baseline_at(teacher.pk, source))])
    note = phrase("AT = mean turns to reach %(threshold)s within %(n_max)s (else 10), relative to %(baseline)s (= 1) "
                  "with the same teacher; dialogues solved at turn 1 are left out; ADR, ATR, RR as FIRE §3.4.1 "
                  "(evaluation.fire.metrics).", threshold=run.threshold, n_max=run.n_max,
                  baseline=baseline.label if baseline else phrase("the baseline"))
    stop = phrase("A dialogue stops after a teacher turn whose score reaches %(threshold)s, is 0 or cannot be read, "
                  "or does not rise (FIRE's runner, model_fire_chat_loader.py), or after %(n_max)s turns; scores read "
                  "as FIRE's get_score (the first whole number of a first line holding 'Score:').",
                  threshold=run.threshold, n_max=run.n_max)
    notes = [note, stop, *_ignored_note(run)]
    columns = ["AT", "ADR", "ATR", "RR"]
    return (
        Table(title=phrase("FIRE free dialogues (Table 4), run %(run)s on %(batch)s", run=run.pk,
                           batch=run.batch.name),
              columns=[phrase("Student"), phrase("Teacher"), phrase("Dialogues"), *columns], rows=overall,
              notes=notes),
        Table(title=phrase("FIRE free dialogues per source dataset (Table 5), run %(run)s", run=run.pk),
              columns=[phrase_in("dataset source", "Source"), phrase("Student"), phrase("Teacher"),
                       phrase("Dialogues"), *columns], rows=by_source, notes=notes),
    )


def fire_run_tables(run: BenchRun) -> list[Table]:
    if run.protocol == BenchRun.Protocol.FIRE_FIXED:
        return [t for t, wanted in ((student_table(run), run.receivers.exists()),
                                    (teacher_table(run), run.providers.exists())) if wanted]
    return list(free_tables(run))
