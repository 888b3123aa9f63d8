"""Bad JSON never gives a 500: deep nesting is refused before parsing recurses, and text a database cannot store
(NUL, lone surrogates) is refused with the field that holds it, on every JSON endpoint of the API."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.parsers import JSONParser
from rest_framework.views import APIView

from annotate.imports.batches import import_fire
from annotate.models import Assignment, Batch, Conversation, Rating, Session, User
from annotate.queue.services import assignment_next
from annotate.server.json_limits import DEPTH_MESSAGE, MAX_JSON_DEPTH, too_deep, unstorable_text
from annotate.server.parsers import CheckedJSONParser
from tests.annotate.rating.fire.fire_data import write_sample
from tests.factories import UserFactory, make_batch

NESTED_BODIES = {"lists": "[" * 1000 + "]" * 1000, "objects": '{"a":' * 1000 + "1" + "}" * 1000}


# --- the scan itself ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "deep"), [
    ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
    ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), True),
    ('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), True),
    ("[]" * 1000, False),  # many brackets, never deep
    (json.dumps({"text": "[" * 1000}), False),  # brackets inside a string do not count
    (json.dumps(["\\\"[" * 500]), False),  # ... nor after escaped quotes and backslashes
    ('["\\\\", ' + "[" * 100, True),  # an escaped backslash ends before the quote that closes the string
    ('"' + "[" * 100, False),  # an unterminated string runs to the end, as the parser reads it
    ("[" * 100 + '"', True),
])
def test_depth_is_counted_outside_strings(text, deep):
    assert too_deep(text) is deep
    assert too_deep(text.encode()) is deep


def test_unstorable_text_names_the_field():
    assert unstorable_text({"ratings": [{"comment": "ok"}, {"comment": "bad\x00"}]}) == (
        "ratings[1].comment", "contains a NUL character (\\u0000), which cannot be stored; remove it")
    assert unstorable_text({"draft": "x\ud800"})[0] == "draft"
    assert unstorable_text({"k\x00": 1})[1].startswith("has a key that contains a NUL")
    assert unstorable_text({"fine": ["é", "😀", 1, None, {"x": True}]}) is None


# --- every JSON endpoint of the API ---------------------------------------------------------------------------

def _api_routes():
    """(route, view class, method) for every DRF view in the URL conf that takes a body."""
    found = []

    def walk(patterns, prefix):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                cls = getattr(entry.callback, "cls", None)
                if isinstance(cls, type) and issubclass(cls, APIView):
                    for method in ("post", "put", "patch"):
                        if hasattr(cls, method):
                            found.append((prefix + str(entry.pattern), cls, method))

    walk(get_resolver().url_patterns, "/")
    return found


def test_every_api_view_parses_json_with_the_checked_parser():
    routes = _api_routes()
    assert len(routes) > 10
    for route, cls, _ in routes:
        json_parsers = [p for p in cls().get_parsers() if isinstance(p, JSONParser)]
        assert all(isinstance(p, CheckedJSONParser) for p in json_parsers), route


@pytest.fixture
def world(db, tmp_path, simulated_model, no_dispatch):
    """An annotator with a session and a FIRE conversation of their own, and an admin: ids for every route."""
    annotator = UserFactory(username="ann", role=User.Role.ANNOTATOR)
    admin = UserFactory(username="root", role=User.Role.ADMIN, is_staff=True, is_superuser=True)
    batch = make_batch(models=[simulated_model], members=[annotator])
    session = assignment_next(annotator=annotator, batch=batch).session
    # One item at a time: its lease runs out (the session stays theirs, under way) so a conversation comes next.
    Assignment.objects.filter(session=session).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    path, images = write_sample(tmp_path)
    assert import_fire(path, name="fire-limits", images=images, overlap=1).status == "imported"
    fire = Batch.objects.get(name="fire-limits")
    conversation = assignment_next(annotator=annotator, batch=fire).work_item.conversation
    values = {"session_id": session.id, "conversation_id": conversation.id, "batch_id": batch.id,
              "round_id": session.rounds.get().id, "job_id": 1, "name": simulated_model.name, "fmt": "csv",
              "token": "x", "sha256": "0" * 64, "run_id": 1, "action": "cancel", "username": annotator.username,
              "uidb64": "x", "link_id": 1, "phase": "pre"}
    return {"annotator": annotator, "admin": admin, "values": values, "session": session,
            "conversation": conversation}


def _url(route: str, values: dict) -> str:
    url = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), route)
    assert "<" not in url and "^" not in url, route
    return url


@pytest.mark.parametrize("shape", sorted(NESTED_BODIES))
def test_a_deeply_nested_body_is_400_on_every_json_endpoint(world, api_client, shape):
    refused, seen = set(), 0
    for user in (world["annotator"], world["admin"]):
        api_client.force_authenticate(user)
        for route, _, method in _api_routes():
            url = _url(route, world["values"])
            response = getattr(api_client, method)(url, NESTED_BODIES[shape], content_type="application/json")
            seen += 1
            assert response.status_code < 500, (method, url, response.status_code)
            if response.status_code == 400:
                assert response.json() == {"detail": DEPTH_MESSAGE, "code": "parse_error"}, (method, url)
                refused.add(route)
    assert seen > 20
    # The endpoints that read a body all got as far as parsing it (a view that needs no body never parses it).
    must_parse = {"/api/sessions/<int:session_id>/feedback/", "/api/sessions/<int:session_id>/draft/",
                  "/api/sessions/<int:session_id>/skip/", "/api/next/",
                  "/api/conversations/<int:conversation_id>/ratings/",
                  "/api/conversations/<int:conversation_id>/skip/",
                  "/api/rounds/<int:round_id>/verdict-override/",
                  "/api/batches/<int:batch_id>/exports/sessions/"}
    assert must_parse <= refused, must_parse - refused


def test_a_nested_body_with_a_declared_charset_is_refused_too(world, api_client):
    api_client.force_authenticate(world["annotator"])
    url = f"/api/sessions/{world['session'].id}/draft/"
    response = api_client.post(url, NESTED_BODIES["lists"].encode("utf-16"),
                               content_type="application/json; charset=utf-16")
    assert response.status_code == 400 and response.json() == {"detail": DEPTH_MESSAGE, "code": "parse_error"}


def test_nesting_within_the_limit_is_parsed_as_before(world, api_client):
    api_client.force_authenticate(world["annotator"])
    url = f"/api/sessions/{world['session'].id}/draft/"
    body = {"draft": "fine", "extra": json.loads("[" * 60 + "]" * 60)}
    assert api_client.post(url, body, format="json").status_code == 204
    assert Session.objects.get(pk=world["session"].pk).feedback_draft == "fine"


# --- text the database cannot store ---------------------------------------------------------------------------

def _post_raw(api_client, url: str, raw_json: str):
    """The body exactly as written: NUL and lone surrogates arrive as JSON escapes, as a browser sends them."""
    return api_client.post(url, raw_json, content_type="application/json")


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800", "\\udfff"])
@pytest.mark.parametrize(("path", "body", "field"), [
    ("sessions/{session}/feedback/", '{{"feedback": "look again{e}", "client_request_id": "r1"}}', "feedback"),
    ("sessions/{session}/draft/", '{{"draft": "half{e}typed"}}', "draft"),
    ("sessions/{session}/skip/", '{{"reason": "broken image{e}"}}', "reason"),
    ("conversations/{conversation}/ratings/",
     '{{"ratings": [{{"turn": 1, "score": 4, "comment": "ok"}}, {{"turn": 2, "score": 3, "comment": "no{e}"}}]}}',
     "ratings[1].comment"),
    ("conversations/{conversation}/skip/", '{{"reason": "{e}"}}', "reason"),
    ("next/", '{{"batch": "name{e}"}}', "batch"),
])
def test_unstorable_text_is_400_with_the_field(world, api_client, path, body, field, escape):
    api_client.force_authenticate(world["annotator"])
    url = "/api/" + path.format(session=world["session"].id, conversation=world["conversation"].id)
    response = _post_raw(api_client, url, body.format(e=escape))
    assert response.status_code == 400, response.content
    detail = response.json()
    assert detail["field"] == field
    assert f"Field {field!r} contains a " in detail["detail"]
    session = Session.objects.get(pk=world["session"].pk)
    assert session.feedback_draft == "" and not session.rounds.filter(index=1).exists()
    assert not Rating.objects.exists()


def test_an_import_name_with_a_nul_is_400_naming_the_field(world, api_client, tmp_path):
    api_client.force_authenticate(world["admin"])
    upload = tmp_path / "tasks.jsonl"
    upload.write_text(json.dumps({"id": "t1", "category": "c", "question": "q?", "answer": "1",
                                  "answer_type": "number"}) + "\n")
    with upload.open("rb") as handle:
        response = api_client.post("/api/imports/", {"name": "bad\x00name", "file": handle}, format="multipart")
    assert response.status_code == 400, response.content
    assert "name" in response.json()
    assert not Batch.objects.filter(name__startswith="bad").exists()


def test_a_conversation_is_untouched_by_a_refused_rating(world, api_client):
    api_client.force_authenticate(world["annotator"])
    conversation: Conversation = world["conversation"]
    body = '{"ratings": [{"turn": 1, "score": 4, "comment": "\\u0000"}], "final": false}'
    assert _post_raw(api_client, f"/api/conversations/{conversation.id}/ratings/", body).status_code == 400
    good = '{"ratings": [{"turn": 1, "score": 4, "comment": "clear"}], "final": false}'
    assert _post_raw(api_client, f"/api/conversations/{conversation.id}/ratings/", good).status_code == 200
    assert list(Rating.objects.values_list("comment", flat=True)) == ["clear"]


# --- JSON typed into a form (batch settings) ------------------------------------------------------------------

def test_deeply_nested_prompt_templates_are_a_report_problem_not_a_crash(db):
    from annotate.importkit.common import ImportReport
    from annotate.imports.batches import batch_settings_clean

    report = ImportReport(kind="interfeedback", batch="b")
    batch_settings_clean({"prompt_templates": "[" * 5000}, report)
    assert [p.field for p in report.problems] == ["settings.prompt_templates"]
    assert DEPTH_MESSAGE in report.problems[0].message
