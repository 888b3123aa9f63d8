"""The Prolific API token reaches Prolific and nothing else: after a whole study (created, published, followed,
approved, paid, and a refused token checked), it is in no page, API answer, call record, log line, export of the
batch (every export in every format the registry has) or study bundle."""

import io
import logging
import zipfile

import pytest
from django.urls import reverse

from annotate.crowd.decisions import participant_decide
from annotate.errors import ApplicationError
from annotate.models import ProlificCall
from annotate.prolific import payments
from annotate.prolific.sync import prolific_studies_sync
from evaluation.exports.bundle import bundle_write
from evaluation.exports.registry import EXPORTS, build_export
from tests.annotate.helpers import finish
from tests.annotate.prolific.flow import create_and_publish, join

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]

SECRET = "pk-live-7Hq2WzSECRETtokenXy91"


def every_export(batch) -> dict[str, bytes]:
    files, refused = {}, {}
    for name, formats in EXPORTS.items():
        for fmt in formats:
            try:
                files[f"{name}.{fmt}"] = build_export(batch, name, fmt).read()
            except ApplicationError as error:  # not an export this batch can have: said why
                refused[f"{name}.{fmt}"] = error.message
    return files


def bundle_files(batch) -> dict[str, bytes]:
    handle = io.BytesIO()
    bundle_write(batch, handle)
    with zipfile.ZipFile(io.BytesIO(handle.getvalue())) as archive:
        return {name: archive.read(name) for name in archive.namelist()} | {"(zip comment)": archive.comment}


def test_the_token_is_in_no_page_log_line_export_or_bundle(batch, researcher, fake, client, caplog, settings,
                                                            monkeypatch):
    from annotate.queue.services import assignment_next

    caplog.set_level(logging.DEBUG)
    fake.token = SECRET
    monkeypatch.setenv(settings.PROLIFIC_TOKEN_ENV, SECRET)
    study = create_and_publish(client, batch, researcher)
    people = {pid: join(study, fake, pid) for pid in ("pid-a", "pid-b")}
    for pid, user in people.items():
        for _ in range(2):
            finish(assignment_next(annotator=user))
        fake.set_status(pid, "AWAITING REVIEW")
        participant_decide(participation=user.participation, decision="approve", by=researcher)
    assert prolific_studies_sync() == 0
    client.post(reverse("research-prolific-pay", args=[batch.id]), {"what": "approvals", "confirm": "1"})
    payments.prolific_bonuses_pay(batch=batch, by=researcher, dry_run=False)
    assert sorted(r["participant_id"] for r in fake.ledger) == ["pid-a", "pid-b"]  # the whole flow happened
    fake.token = "a-newer-token"  # and then Prolific refuses ours: the error must not quote it either
    checked = client.post(reverse("research-prolific-check", args=[batch.id]), follow=True).content.decode()
    assert "refused the API token" in checked

    pages = {"check": checked}
    for name in ("research-invites", "research-participants", "api-prolific-study"):
        pages[name] = client.get(reverse(name, args=[batch.id])).content.decode()
    exports = every_export(batch)
    bundle = bundle_files(batch)
    # the search is worth something only if the files hold the study's data
    assert {"participants.csv", "approvals.txt", "bonuses.csv"} <= set(exports)
    assert b"pid-a" in exports["approvals.txt"] and b"1.50" in exports["bonuses.csv"]
    assert len(bundle) > 5 and any(name.startswith("crowd/") for name in bundle)

    token = SECRET.encode()
    assert [name for name, text in pages.items() if SECRET in text] == []
    assert [name for name, content in exports.items() if token in content] == []
    assert [name for name, content in bundle.items() if token in content] == []
    assert SECRET not in caplog.text
    assert SECRET not in str(list(ProlificCall.objects.values()))
    assert any(r["authorization"] == f"Token {SECRET}" for r in fake.requests)  # it did go to Prolific
