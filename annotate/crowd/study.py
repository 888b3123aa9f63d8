"""A batch's crowd study settings: what it asks of invited participants besides the items, and how they are paid.

One JSON document, the same on the study page, in the API, in the ``study`` command and in the import settings
(``"study": {...}``); keys left out keep their value:

| key | what |
|---|---|
| consent | Markdown a participant accepts before the first item ("" : none). Each new text is a new version |
| no_consent_code | the code shown to a participant who declines |
| screening | questions with a known answer and an explanation (annotate.crowd.questions) |
| screening_pass_mark | questions to get right (each has two tries); default: all of them |
| screened_out_code | the code shown to a participant screened out |
| attention_rate | the share of each person's items that are attention checks (gold items): the batch's gold rate |
| max_attention_failures | failed attention checks that end a participation (null: never) |
| pre_survey, post_survey | the questionnaires before the first item and after the last |
| time_limit_minutes | from joining; past it the participation ends and held items are freed (null: none) |
| bonus_rule, bonus_amount | none, per_item, per_corrected_session or fixed; the amount (per unit, or fixed) |
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.db.models import Max

from annotate.crowd.questions import screening_clean, survey_clean
from annotate.errors import InvalidFields
from annotate.models import Batch, ConsentText, CrowdStudy, User
from annotate.queue.gold import batch_check_supply

STUDY_KEYS = ("consent", "no_consent_code", "screening", "screening_pass_mark", "screened_out_code",
              "attention_rate", "max_attention_failures", "pre_survey", "post_survey", "time_limit_minutes",
              "bonus_rule", "bonus_amount")
READ_ONLY_KEYS = ("consent_version", "attention_checks")  # in the document, never changed through it
CODE_PATTERN = re.compile(r"^[A-Za-z0-9_-]{0,64}$")
MAX_CONSENT_CHARS = 50_000
MAX_BONUS = Decimal("10000")
MAX_TIME_LIMIT_MINUTES = 60 * 24 * 30


def study_of(batch: Batch) -> CrowdStudy:
    """The batch's study settings; a batch without a row has the defaults (asks nothing besides the items)."""
    return CrowdStudy.objects.filter(batch_id=batch.pk).first() or CrowdStudy(batch=batch)


def _code(value: Any, key: str, problems: list[tuple[str, str]]) -> str:
    code = value.strip() if isinstance(value, str) else None
    if code is None or not CODE_PATTERN.match(code):
        problems.append((key, "at most 64 letters, digits, '-' or '_'"))
        return ""
    return code


def _whole(value: Any, key: str, problems: list[tuple[str, str]], low: int, high: int) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        number = None
    if isinstance(value, bool) or number is None or not low <= number <= high:
        problems.append((key, f"a whole number from {low} to {high}, or empty for none"))
        return None
    return number


def _fraction(value: Any, key: str, problems: list[tuple[str, str]]) -> float:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = -1.0
    if isinstance(value, bool) or not 0.0 <= rate <= 1.0:
        problems.append((key, f"a number from 0 to 1, got {value!r}"))
        return 0.0
    return rate


def _amount(value: Any, key: str, problems: list[tuple[str, str]]) -> Decimal:
    try:
        amount = Decimal(str(value).strip() or "0")
    except InvalidOperation:
        amount = Decimal(-1)
    if isinstance(value, bool) or not amount.is_finite() or not 0 <= amount <= MAX_BONUS:
        problems.append((key, f"an amount from 0 to {MAX_BONUS} (the platform's currency), got {value!r}"))
        return Decimal(0)
    return amount.quantize(Decimal("0.01"))


def study_settings_clean(raw: Any, *, name: str = "study") -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """(checked settings, problems): only the keys given; problems named ``study.key`` (``study.screening[1].answer``)."""
    problems: list[tuple[str, str]] = []
    if not isinstance(raw, dict):
        return {}, [(name, "expected an object of study settings")]
    clean: dict[str, Any] = {}
    for key in sorted(set(raw) - set(STUDY_KEYS) - set(READ_ONLY_KEYS)):  # read only: may be given back
        problems.append((f"{name}.{key}", f"unknown study setting; known: {', '.join(STUDY_KEYS)}"))
    if "consent" in raw:
        text = raw["consent"] or ""
        if not isinstance(text, str) or len(text) > MAX_CONSENT_CHARS:
            problems.append((f"{name}.consent", f"Markdown text of at most {MAX_CONSENT_CHARS:,} characters"))
        else:
            clean["consent"] = text.replace("\r\n", "\n").replace("\r", "\n").strip()  # a browser's form sends \r\n
    for key in ("no_consent_code", "screened_out_code"):
        if key in raw:
            clean[key] = _code(raw[key] or "", f"{name}.{key}", problems)
    if "screening" in raw:
        clean["screening"] = screening_clean(raw["screening"], problems, f"{name}.screening")
    if "screening_pass_mark" in raw:
        clean["screening_pass_mark"] = _whole(raw["screening_pass_mark"], f"{name}.screening_pass_mark", problems,
                                              0, 100)
    if "attention_rate" in raw:
        clean["attention_rate"] = _fraction(raw["attention_rate"], f"{name}.attention_rate", problems)
    if "max_attention_failures" in raw:
        clean["max_attention_failures"] = _whole(raw["max_attention_failures"], f"{name}.max_attention_failures",
                                                 problems, 1, 100)
    for key in ("pre_survey", "post_survey"):
        if key in raw:
            clean[key] = survey_clean(raw[key], problems, f"{name}.{key}")
    if "time_limit_minutes" in raw:
        clean["time_limit_minutes"] = _whole(raw["time_limit_minutes"], f"{name}.time_limit_minutes", problems, 1,
                                             MAX_TIME_LIMIT_MINUTES)
    if "bonus_rule" in raw:
        if raw["bonus_rule"] in CrowdStudy.BonusRule.values:
            clean["bonus_rule"] = raw["bonus_rule"]
        else:
            problems.append((f"{name}.bonus_rule", f"one of {', '.join(CrowdStudy.BonusRule.values)}"))
    if "bonus_amount" in raw:
        clean["bonus_amount"] = _amount(raw["bonus_amount"], f"{name}.bonus_amount", problems)
    if "screening" in clean and (clean.get("screening_pass_mark") or 0) > len(clean["screening"]):
        problems.append((f"{name}.screening_pass_mark", f"{clean['screening_pass_mark']} right answers asked of "
                                                        f"{len(clean['screening'])} screening question(s)"))
    return clean, problems


def _pass_mark_check(study: CrowdStudy, problems: list[tuple[str, str]], name: str) -> None:
    questions = len(study.screening)
    if not questions:
        study.screening_pass_mark = 0
    elif not study.screening_pass_mark:
        study.screening_pass_mark = questions  # all of them, unless the researcher says fewer
    elif study.screening_pass_mark > questions:
        problems.append((f"{name}.screening_pass_mark",
                         f"{study.screening_pass_mark} right answers asked of {questions} screening question(s)"))


def study_apply(*, batch: Batch, clean: dict[str, Any], by: User | None = None, name: str = "study") -> CrowdStudy:
    """Write checked settings (study_settings_clean) on the batch, in the caller's transaction. A changed consent
    text becomes a new version (ConsentText); participants who accepted an earlier one keep their acceptance."""
    study, _ = CrowdStudy.objects.select_for_update().get_or_create(batch=batch)
    for key in ("no_consent_code", "screening", "screening_pass_mark", "screened_out_code", "max_attention_failures",
                "pre_survey", "post_survey", "time_limit_minutes", "bonus_rule", "bonus_amount"):
        if key in clean:
            setattr(study, key, clean[key] if clean[key] is not None or key in (
                "max_attention_failures", "time_limit_minutes") else 0)
    problems: list[tuple[str, str]] = []
    _pass_mark_check(study, problems, name)
    if problems:
        raise InvalidFields(problems)
    if "consent" in clean and clean["consent"] != _current_consent(batch, study):
        if clean["consent"]:
            latest = ConsentText.objects.filter(batch=batch).aggregate(v=Max("version"))["v"] or 0
            ConsentText.objects.create(batch=batch, version=latest + 1, text=clean["consent"], created_by=by)
            study.consent_version = latest + 1
        else:
            study.consent_version = 0
        study.consent_text = clean["consent"]
    if "attention_rate" in clean and batch.gold_rate != clean["attention_rate"]:
        batch.gold_rate = clean["attention_rate"]
        Batch.objects.filter(pk=batch.pk).update(gold_rate=batch.gold_rate)
    study.updated_by = by
    study.save()
    return study


def _current_consent(batch: Batch, study: CrowdStudy) -> str:
    return study.consent_text if study.consent_version else ""


def study_update(*, batch: Batch, settings: Any, by: User | None = None) -> CrowdStudy:
    """Check, then write, the given study settings (nothing written when anything is wrong)."""
    clean, problems = study_settings_clean(settings)
    if problems:
        raise InvalidFields(problems)
    with transaction.atomic():
        return study_apply(batch=batch, clean=clean, by=by)


def study_document(batch: Batch, study: CrowdStudy | None = None) -> dict[str, Any]:
    """The settings as one JSON document (what study_update takes), with the consent's version and whether the
    gold items and the attention rate give every participant their planned checks (both read only)."""
    study = study or study_of(batch)
    return {"consent": _current_consent(batch, study), "consent_version": study.consent_version or None,
            "no_consent_code": study.no_consent_code, "screening": study.screening,
            "screening_pass_mark": study.screening_pass_mark, "screened_out_code": study.screened_out_code,
            "attention_rate": batch.gold_rate, "max_attention_failures": study.max_attention_failures,
            "pre_survey": study.pre_survey, "post_survey": study.post_survey,
            "time_limit_minutes": study.time_limit_minutes, "bonus_rule": study.bonus_rule,
            "bonus_amount": str(study.bonus_amount), "attention_checks": batch_check_supply(batch).as_dict()}
