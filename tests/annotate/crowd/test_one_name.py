"""One name per participant: the pseudonym their own pages show is the one the researchers' participants page and
the participants export call them by; the account's random username is shown nowhere."""

import csv
import io
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotate.queue.services import assignment_next
from tests.annotate.crowd.study_data import join, study_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def _top_bar_name(html: str) -> str:
    return re.search(r'<span class="who" id="who"[^>]*>([^<]*) · ', html)[1]


def test_the_participant_and_the_researchers_use_the_same_pseudonym(client, simulated_model, researcher):
    batch = study_batch(simulated_model, study=False)
    batch.members.add(researcher)
    user = join(client, batch, pid="pid-one-name")
    session = assignment_next(annotator=user).session
    pages = [client.get(reverse(name, args=args)).content.decode() for name, args in
             (("home", []), ("crowd-done", []), ("session-page", [session.pk]))]
    assert {_top_bar_name(html) for html in pages} == {user.pseudonym}
    assert not any(user.username in html for html in pages)  # the account's random name is never shown

    staff = Client()
    staff.force_login(researcher)
    table = staff.get(reverse("research-participants", args=[batch.pk])).content.decode()
    assert user.pseudonym in table and user.username not in table
    export = staff.get(reverse("api-batch-table", args=[batch.pk, "participants", "csv"]))
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert [(row["participant"], row["participant_id"]) for row in rows] == [(user.pseudonym, "pid-one-name")]


def test_annotators_with_an_account_keep_their_username(client, annotator):
    client.force_login(annotator)
    assert _top_bar_name(client.get(reverse("home")).content.decode()) == annotator.username


def test_the_no_access_page_names_a_participant_by_their_pseudonym(client, simulated_model):
    batch = study_batch(simulated_model, study=False)
    user = join(client, batch)
    page = client.get(reverse("research-invites", args=[batch.pk]))  # a researchers' page
    html = page.content.decode()
    assert page.status_code == 403 and f"({user.pseudonym}, annotator)" in html and user.username not in html
