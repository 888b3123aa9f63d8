"""The participants' exports, for every kind of batch: the participants table and their questionnaire answers
(csv, json), and the files a crowd platform takes for bulk approval (the approved participants' ids, one a line)
and bonuses (``participant_id,amount`` lines, no header), through the exports registry (pages, API,
``export_tables``). The study bundle holds the table and the answers by pseudonym only (no platform ids: a bundle
is made to be shared), the study's settings and every consent text shown."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from annotate.crowd.study import study_document, study_of
from annotate.models import Batch, ConsentText, Participation, SurveyResponse
from annotate.prolific.payments import bonus_source_register
from evaluation.exports import registry as exports
from evaluation.exports.bundle import BundleFile, json_bytes, register_bundle_files
from evaluation.exports.filters import ReportFilters
from evaluation.exports.renderers.tables import csv_cell
from evaluation.participants.selectors import APPROVE, ParticipantRow, participants_table
from evaluation.table import Cell, Table


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _yes_no(value: bool | None) -> str | None:
    return None if value is None else "yes" if value else "no"


def _row(row: ParticipantRow, with_ids: bool) -> list[Cell]:
    p, q, d = row.participation, row.quality, row.decision
    link = p.user.invite_link
    cells: list[Cell] = [row.pseudonym] + ([row.participant_id or None] if with_ids else []) + [
        link.label or f"link {link.pk}" if link else None, _when(p.started_at), row.state, p.consent_version,
        _when(p.consented_at), p.screening_score, _yes_no(p.screening_passed), row.completed,
        row.corrected_sessions, row.minutes, q.attention_checks if q else 0, q.attention_failed if q else 0,
        round(q.gold_accuracy * 100, 1) if q and q.gold_accuracy is not None else None,
        q.leak_warnings if q else 0, q.leaks_sent if q else 0, "; ".join(row.flags) or None,
        row.suggestion or None, row.suggestion_reason, d.decision if d else None, d.reason if d else None,
        d.decided_by.username if d and d.decided_by else None, _when(d.decided_at) if d else None, row.bonus]
    return cells


def participants_export(batch: Batch, *, with_ids: bool = True) -> Table:
    columns = ["participant"] + (["participant_id"] if with_ids else []) + [
        "invite_link", "joined_at", "state", "consent_version", "consented_at", "screening_score",
        "screening_passed", "completed_items", "corrected_sessions", "minutes", "attention_checks",
        "attention_failed", "gold_accuracy_pct", "leak_warnings", "sent_despite_warning", "flags", "suggestion",
        "suggestion_reason", "decision", "decision_reason", "decided_by", "decided_at", "bonus"]
    return Table(title=f"Participants of {batch.name}", columns=columns,
                 rows=[_row(row, with_ids) for row in participants_table(batch)],
                 notes=["state: consent, screening, pre_survey, items, post_survey, finished, or how it ended "
                        "(no_consent, screened_out, attention, returned, timed_out).",
                        "decision: the latest (each decision is kept: the API lists them all); bonus: the batch's "
                        "bonus rule applied, paid to approved participants only."])


def _answer_cell(value: Any) -> Cell:
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return value if value is None or isinstance(value, int | float | str) else str(value)


def surveys_export(batch: Batch, *, with_ids: bool = True) -> Table:
    """One row per participant who answered a questionnaire: each question a column (``pre:<id>``, ``post:<id>``;
    several options joined by "; ")."""
    study = study_of(batch)
    questions = [("pre", q["id"]) for q in study.pre_survey] + [("post", q["id"]) for q in study.post_survey]
    answers: dict[int, dict[str, Any]] = {}
    for participation_id, phase, given, at in SurveyResponse.objects.filter(participation__batch=batch).values_list(
            "participation_id", "phase", "answers", "submitted_at"):
        row = answers.setdefault(participation_id, {})
        row.update({f"{phase}:{key}": value for key, value in given.items()})
        row[f"{phase}_submitted_at"] = at.isoformat()
    columns = ["participant"] + (["participant_id"] if with_ids else []) + [
        "pre_submitted_at", "post_submitted_at"] + [f"{phase}:{qid}" for phase, qid in questions]
    rows: list[list[Cell]] = []
    for participation in Participation.objects.filter(pk__in=list(answers)).select_related("user"):
        given = answers[participation.pk]
        rows.append([participation.user.pseudonym] + ([participation.user.external_id] if with_ids else []) + [
            given.get("pre_submitted_at"), given.get("post_submitted_at")] + [
            _answer_cell(given.get(f"{phase}:{qid}")) for phase, qid in questions])
    return Table(title=f"Questionnaire answers of {batch.name}", columns=columns, rows=rows,
                 notes=["Questions as defined in the study's settings (settings in the bundle's crowd/study.json)."])


def _approved(batch: Batch) -> list[ParticipantRow]:
    return [row for row in participants_table(batch) if row.decided == APPROVE and row.participant_id]


def approvals(batch: Batch, fmt: str, filters: ReportFilters) -> bytes:
    """The approved participants' platform ids, one a line (Prolific's bulk approval takes this list)."""
    return "".join(f"{row.participant_id}\n" for row in _approved(batch)).encode()


def bonuses(batch: Batch, fmt: str, filters: ReportFilters) -> bytes:
    """``participant_id,amount`` per approved participant with a bonus (Prolific's bulk bonus format: no header)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in _approved(batch):
        if row.bonus > 0:
            writer.writerow([csv_cell(row.participant_id), f"{row.bonus:.2f}"])
    return buffer.getvalue().encode()


def bundle_files(batch: Batch, skipped: dict[str, str]) -> Iterator[BundleFile]:
    if not Participation.objects.filter(batch=batch).exists():
        return
    for fmt in ("csv", "json"):
        yield BundleFile(f"crowd/participants.{fmt}", f"The invited participants by pseudonym: progress, attention "
                         f"checks, quality, decisions and bonuses ({fmt}; platform ids left out)",
                         exports.render_tables([participants_export(batch, with_ids=False)], fmt).encode())
    study = study_of(batch)
    if study.pre_survey or study.post_survey:
        for fmt in ("csv", "json"):
            yield BundleFile(f"crowd/surveys.{fmt}", f"Their questionnaire answers by pseudonym ({fmt})",
                             exports.render_tables([surveys_export(batch, with_ids=False)], fmt).encode())
    yield BundleFile("crowd/study.json", "The study's settings: consent, screening questions, attention checks, "
                     "questionnaires, time limit, bonus rule", json_bytes(study_document(batch, study)))
    texts = ConsentText.objects.filter(batch=batch).order_by("version")
    if texts:
        yield BundleFile("crowd/consent.md", "Every consent text participants were shown, by version",
                         "\n\n".join(f"## Version {t.version} ({t.created_at:%Y-%m-%d %H:%M} UTC)\n\n{t.text}"
                                     for t in texts).encode() + b"\n")


exports.register_export("participants", ("csv", "json"),
                        lambda batch, fmt, filters: participants_export(batch))
exports.register_export("surveys", ("csv", "json"), lambda batch, fmt, filters: surveys_export(batch))
exports.register_export("approvals", ("txt",), approvals)
exports.register_export("bonuses", ("csv",), bonuses)
register_bundle_files(bundle_files)


def _prolific_bonuses(batch: Batch) -> dict[str, Decimal]:
    """The bonus of the batch's rule per approved participant, by Prolific id (paid through Prolific's API)."""
    return {row.participant_id: row.bonus for row in participants_table(batch)
            if row.decided == APPROVE and row.bonus > 0 and row.participant_id}


bonus_source_register(_prolific_bonuses)
