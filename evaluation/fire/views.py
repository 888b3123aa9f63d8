"""The FIRE rating report on the batch report page (its tables, each with its downloads) and those downloads:
byte for byte what `export_fire` writes."""

from __future__ import annotations

import json

from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from annotate.errors import ApplicationError
from annotate.models import Rating
from annotate.people.access import batch_for_researcher, researcher_required
from annotate.server.version import stamp
from annotate.wording import shown
from evaluation.exports import registry as exports
from evaluation.exports.renderers.html import html_table
from evaluation.exports.renderers.tables import render as render_table
from evaluation.fire import reports as fire_reports

# The FIRE report's sections: (export name, by, heading), each as on `export_fire --what NAME [--by BY]`.
FIRE_SECTIONS = (
    ("table-a1", "split", _("Table A1 · Mean ratings (1-5) with 95% CIs, per split")),
    ("summary", "source", _("Mean ratings per source")),
    ("summary", "turn", _("Mean ratings per turn")),
    ("agreement", "split", _("Inter-rater agreement: Krippendorff's alpha (ordinal and interval)")),
    ("kappa", "split", _("Pairwise quadratic-weighted kappa")),
    ("disagreements", "split", _("Turns with the largest disagreement")),
)
FIRE_FORMATS = ("md", "csv", "tex", "json")


def report_sections(batch) -> dict:
    """The FIRE report's part of the batch report page (StudyKind.report_sections): each FIRE table as HTML with its
    downloads, or why it is empty (no ratings yet; agreement needs 2 raters)."""
    raters = Rating.objects.filter(turn__conversation__batch=batch, is_final=True).values("annotator").distinct()
    sections = []
    for what, by, heading in FIRE_SECTIONS:
        links = [(fmt, reverse("research-fire-export", args=[batch.id, what, fmt]) + f"?by={by}")
                 for fmt in FIRE_FORMATS]
        try:
            table = html_table(fire_reports.FIRE_TABLES[what](batch, by=by))
        except ApplicationError as reason:
            sections.append({"id": f"fire-{what}-{by}", "heading": heading, "empty": shown(reason.message),
                             "links": []})
            continue
        sections.append({"id": f"fire-{what}-{by}", "heading": heading, "table": table, "links": links})
    return {"fire": {
        "sections": sections, "raters": raters.count(),
        "long": [(fmt, reverse("research-fire-export", args=[batch.id, "ratings", fmt])) for fmt in ("csv", "json")]
        + [("fire json", reverse("research-fire-export", args=[batch.id, "conversations", "json"]))],
    }}


@researcher_required
def batch_fire_export(request, batch_id: int, what: str, fmt: str):
    """A FIRE table (or the rated conversations) as a file: what `export_fire` writes."""
    batch = batch_for_researcher(request.user, batch_id)
    if batch.kind != batch.Kind.FIRE:
        raise Http404("Not a FIRE batch.")
    by = request.GET.get("by", "split")
    if by not in ("split", "source", "turn"):
        return HttpResponseBadRequest("by must be split, source or turn.", content_type="text/plain")
    try:
        if what == "conversations" and fmt == "json":
            text = json.dumps(fire_reports.fire_conversations_export(batch), ensure_ascii=False, indent=1) + "\n"
            content_type = "application/json"
        elif what in fire_reports.FIRE_TABLES and fmt in FIRE_FORMATS:
            text = render_table(fire_reports.FIRE_TABLES[what](batch, by=by), fmt)
            content_type = exports.CONTENT_TYPES[fmt]
        else:
            raise Http404(f"No FIRE export {what}.{fmt}.")
    except ApplicationError as failure:
        return HttpResponseBadRequest(failure.message, content_type="text/plain")
    response = HttpResponse(text, content_type=content_type)
    suffix = f"-{by}" if what == "summary" else ""
    response["Content-Disposition"] = f'attachment; filename="{batch.name}-fire-{what}{suffix}.{fmt}"'
    return stamp(response)
