"""Report and session-browser filters: one parser for pages, the API and the export command."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.http import HttpRequest

from annotate.errors import ApplicationError
from annotate.wording import phrase
from evaluation.models import NEVER

OUTCOME_CHOICES = [("", "any"), ("0", "Round 0"), ("1", "Round 1"), ("2", "Round 2"), ("3", "Round 3"),
                   ("never", "Never")]


@dataclass(frozen=True)
class ReportFilters:
    model: str = ""  # ModelConfig.name
    category: str = ""
    annotator: str = ""  # pseudonym, never a username
    date_from: dt.date | None = None  # completion date, inclusive (UTC)
    date_to: dt.date | None = None  # inclusive
    outcome: int | None = None  # corrected round 0..3 or NEVER; the session browser and exports only
    # Not filters: a seeded train/test split by item for the preference data exports (evaluation.preference)
    test_fraction: float | None = None  # the share of items in the test split, 0 < x < 1; None: no split
    split_seed: int = 0

    @property
    def by_date(self) -> bool:
        return self.date_from is not None or self.date_to is not None

    @property
    def active(self) -> bool:
        filters = {key: value for key, value in asdict(self).items() if key not in SPLIT_FIELDS}
        return any(filters.values()) or self.outcome == 0

    def completed_range(self) -> tuple[dt.datetime | None, dt.datetime | None]:
        """[start, end) datetimes in UTC covering the inclusive date range."""
        start = dt.datetime.combine(self.date_from, dt.time.min, dt.UTC) if self.date_from else None
        end = dt.datetime.combine(self.date_to + dt.timedelta(days=1), dt.time.min, dt.UTC) if self.date_to else None
        return start, end

    def query_params(self) -> dict[str, str]:
        params = {
            "model": self.model,
            "category": self.category,
            "annotator": self.annotator,
            "date_from": self.date_from.isoformat() if self.date_from else "",
            "date_to": self.date_to.isoformat() if self.date_to else "",
            "outcome": "" if self.outcome is None else ("never" if self.outcome == NEVER else str(self.outcome)),
            "test_fraction": "" if self.test_fraction is None else repr(self.test_fraction),
            "split_seed": str(self.split_seed) if self.test_fraction is not None and self.split_seed else "",
        }
        return {key: value for key, value in params.items() if value}

    def querystring(self) -> str:
        return urlencode(self.query_params())

    def describe(self) -> str:
        """One line for table notes, so an exported table says which subset it covers."""
        parts = [f"{key}={value}" for key, value in self.query_params().items() if key not in SPLIT_FIELDS]
        return phrase("Filtered: %(filters)s", filters=", ".join(parts)) if parts else ""


NO_FILTERS = ReportFilters()
SPLIT_FIELDS = ("test_fraction", "split_seed")


class ReportFilterForm(forms.Form):
    model = forms.CharField(required=False, max_length=64)
    category = forms.CharField(required=False, max_length=100)
    annotator = forms.CharField(required=False, max_length=32, help_text="Pseudonym")
    date_from = forms.DateField(required=False, input_formats=["%Y-%m-%d"])
    date_to = forms.DateField(required=False, input_formats=["%Y-%m-%d"])
    outcome = forms.ChoiceField(required=False, choices=OUTCOME_CHOICES)
    test_fraction = forms.FloatField(required=False, help_text="Share of items in the test split, between 0 and 1")
    split_seed = forms.IntegerField(required=False, min_value=0)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if data.get("date_from") and data.get("date_to") and data["date_from"] > data["date_to"]:
            raise forms.ValidationError("date_from is after date_to.")
        fraction = data.get("test_fraction")
        if fraction is not None and not 0 < fraction < 1:
            self.add_error("test_fraction", f"{fraction} is not between 0 and 1 (0.2 puts a fifth of the items in "
                                            "the test split).")
        if data.get("split_seed") is not None and fraction is None:
            self.add_error("split_seed", "A seed needs test_fraction (the split it seeds).")
        return data

    def filters(self) -> ReportFilters:
        data = self.cleaned_data
        outcome = data.get("outcome") or ""
        return ReportFilters(
            model=data.get("model") or "",
            category=data.get("category") or "",
            annotator=data.get("annotator") or "",
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
            outcome=None if outcome == "" else (NEVER if outcome == "never" else int(outcome)),
            test_fraction=data.get("test_fraction"),
            split_seed=data.get("split_seed") or 0,
        )


def form_error_text(form: forms.Form) -> str:
    return "; ".join(
        f"{field}: {' '.join(map(str, errors))}" if field != "__all__" else " ".join(map(str, errors))
        for field, errors in form.errors.items()
    )


def parse_filters(params: Mapping[str, object]) -> ReportFilters:
    """Filters from a query dict (or any mapping); bad values raise ApplicationError naming the parameter."""
    form = ReportFilterForm(params)
    if not form.is_valid():
        raise ApplicationError(f"Bad filter: {form_error_text(form)} (dates are YYYY-MM-DD).", code="bad_filter")
    return form.filters()


def filters_from_request(request: HttpRequest) -> tuple[ReportFilterForm, ReportFilters, str]:
    """(form, filters, error): bad filter values show as a message on the page and are ignored."""
    form = ReportFilterForm(request.GET or None)
    if form.is_bound and form.is_valid():
        return form, form.filters(), ""
    return form, NO_FILTERS, form_error_text(form) if form.is_bound else ""
