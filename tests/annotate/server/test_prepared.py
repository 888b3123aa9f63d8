"""Prepared queries return what the ORM returns, with each call's own arguments, and refuse what they cannot do."""

import pytest
from django.db.models import Exists, OuterRef
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Round, Session, Task, WorkItem
from annotate.queue import services as queue
from annotate.server.prepared import PreparedQuery, PreparedUpdate
from tests.annotate.helpers import field_values
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def compiled(settings):
    """These tests are about the compiled path, also in the suite's PREPARED_QUERIES=0 run (the plain-ORM path is
    the subject of test_the_setting_turns_every_prepared_query_into_the_plain_orm)."""
    settings.PREPARED_QUERIES = True


@pytest.fixture
def two_sessions(no_dispatch):
    batch = make_batch(models=[ModelConfigFactory()], tasks=2, options=["A", "B"])
    first, second = UserFactory(), UserFactory()
    return [queue.assignment_next(annotator=user, batch=batch).session for user in (first, second)]


def test_instances_and_their_related_rows_are_the_orms(two_sessions, django_assert_num_queries):
    prepared = PreparedQuery(lambda pk: Session.objects.select_related("task", "batch").filter(pk=pk), int)
    for session in two_sessions:  # the second call runs the SQL of the first with its own argument
        expected = Session.objects.select_related("task", "batch").get(pk=session.pk)
        with django_assert_num_queries(1):
            got = prepared.first(session.pk)
            assert field_values(got) == field_values(expected)
            assert field_values(got.task) == field_values(expected.task)  # JSON options converted as the ORM does
            assert got.task.options == ["A", "B"]
            assert field_values(got.batch) == field_values(expected.batch)
        assert got._state.adding is False and got._state.db == "default"
    assert prepared.first(10**9) is None


def test_values_list_rows_keep_order_and_conversions(two_sessions):
    session = two_sessions[0]

    def build(annotator_id):
        return (Session.objects.filter(annotator_id=annotator_id)
                .annotate(has_rounds=Exists(Round.objects.filter(session=OuterRef("pk"))))
                .order_by("-id").values_list("id", "started_at", "task__external_id", "has_rounds"))

    prepared = PreparedQuery(build, int)
    assert prepared.all(session.annotator_id) == list(build(session.annotator_id))
    assert prepared.all(session.annotator_id)[0][3] is True


def test_an_argument_used_twice_takes_the_value_of_the_call(two_sessions):
    annotator_id = two_sessions[0].annotator_id
    prepared = PreparedQuery(
        lambda user_id: Session.objects.filter(annotator_id=user_id)
        .annotate(mine=Exists(Session.objects.filter(annotator_id=user_id))).values_list("id", "mine"),
        int,
    )
    assert prepared.all(annotator_id) == [(two_sessions[0].id, True)]
    assert prepared.all(two_sessions[1].annotator_id) == [(two_sessions[1].id, True)]


def test_the_queryset_is_built_once():
    built = []

    def build(name):
        built.append(name)
        return Task.objects.filter(external_id=name).values_list("id")

    prepared = PreparedQuery(build, str)
    prepared.all("a")
    assert len(built) == 2  # with two sets of stand-ins, to tell them from the query's own constants
    prepared.all("b")
    prepared.all("c")
    assert len(built) == 2


def test_comparisons_on_positive_columns_take_each_value(no_dispatch):
    make_batch(models=[ModelConfigFactory()], tasks=3)
    WorkItem.objects.filter(pk=WorkItem.objects.order_by("id")[0].pk).update(completed_count=2)
    prepared = PreparedQuery(lambda limit: WorkItem.objects.filter(completed_count__lt=limit).values_list("id"), int)
    assert [len(prepared.all(limit)) for limit in (0, 1, 3)] == [0, 2, 3]


def test_update_counts_the_rows_it_changed(two_sessions):
    first, second = two_sessions
    save = PreparedUpdate(
        lambda draft, pk: (Session.objects.filter(pk=pk).exclude(status=Session.Status.COMPLETED),
                           {"feedback_draft": draft}),
        str, int,
    )
    assert save.run("typed so far", first.pk) == 1
    assert save.run("other text", second.pk) == 1
    assert Session.objects.get(pk=first.pk).feedback_draft == "typed so far"
    assert Session.objects.get(pk=second.pk).feedback_draft == "other text"
    Session.objects.filter(pk=first.pk).update(status=Session.Status.COMPLETED)
    assert save.run("too late", first.pk) == 0


@pytest.mark.parametrize("build, kinds, message", [
    (lambda name: Task.objects.filter(external_id__contains=name), (str,), "not a plain query parameter"),
    (lambda pk: Session.objects.prefetch_related("rounds").filter(pk=pk), (int,), "cannot prefetch"),
    (lambda pk: WorkItem.objects.filter(pk=pk).values_list("id", flat=True), (int,), "values_list rows"),
    (lambda pk: WorkItem.objects.filter(pk=pk).values("id"), (int,), "values_list rows"),
    (lambda pk: WorkItem.objects.filter(pk=pk).annotate(n=Exists(Round.objects.all())).values_list("n", "id"),
     (int,), "plain fields first"),
])
def test_what_cannot_be_prepared_is_refused_on_first_use(build, kinds, message):
    with pytest.raises(TypeError, match=message):
        PreparedQuery(build, *kinds).all("x" if kinds == (str,) else 1)


def test_token_authentication_answers_as_drf_does():
    user = UserFactory()
    token = Token.objects.create(user=user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = api.post("/api/next/", {}, format="json")
    assert response.json() == {"state": "done"}  # authenticated: nothing to annotate yet
    api.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = api.post("/api/next/", {}, format="json")
    assert (response.status_code, response.json()["detail"]) == (403, "Invalid token.")  # 403: session auth comes first
    user.is_active = False
    user.save()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = api.post("/api/next/", {}, format="json")
    assert (response.status_code, response.json()["detail"]) == (403, "User inactive or deleted.")


def test_the_private_django_internals_it_reads_are_still_there():
    """Fails loudly on a Django upgrade: prepared queries read private queryset internals checked on one release."""
    import django
    from django.db.models import QuerySet, query
    from django.db.models.sql import UpdateQuery

    from annotate.server import prepared

    checked = ".".join(map(str, prepared.CHECKED_DJANGO))
    assert prepared.django_is_checked(), (
        f"annotate.server.prepared was checked against Django {checked}'s private queryset internals, but Django "
        f"{django.get_version()} is installed. Check what it reads (see its docstring) against the new release, "
        "then update CHECKED_DJANGO; until then run with PREPARED_QUERIES=0 (the plain ORM).")
    queryset = Session.objects.select_related("task").filter(pk=1)
    for name in ("_prefetch_related_lookups", "_known_related_objects", "_iterable_class", "_fields"):
        assert hasattr(queryset, name), f"QuerySet.{name} is gone: annotate.server.prepared must change"
    assert all(hasattr(query, name) for name in ("ModelIterable", "ValuesListIterable", "get_related_populators"))
    assert hasattr(UpdateQuery, "add_update_values") and hasattr(QuerySet, "update")
    compiler = queryset.query.get_compiler(using="default")
    compiler.as_sql()
    assert {"model", "select_fields", "related_klass_infos"} <= set(compiler.klass_info), compiler.klass_info


@pytest.mark.parametrize("enabled", [True, False], ids=["prepared", "plain-orm"])
def test_the_setting_turns_every_prepared_query_into_the_plain_orm(two_sessions, settings, enabled,
                                                                   django_assert_num_queries):
    settings.PREPARED_QUERIES = enabled
    session = two_sessions[0]
    read = PreparedQuery(lambda pk: Session.objects.select_related("task").filter(pk=pk), int)
    rows = PreparedQuery(lambda pk: Round.objects.filter(session_id=pk).values_list("index", "generation_status"), int)
    write = PreparedUpdate(lambda draft, pk: (Session.objects.filter(pk=pk), {"feedback_draft": draft}), str, int)
    task = Task.objects.get(pk=session.task_id)
    with django_assert_num_queries(1):
        got = read.first(session.pk)
        assert field_values(got.task) == field_values(task)
    assert rows.all(session.pk) == list(Round.objects.filter(session_id=session.pk).values_list(
        "index", "generation_status"))
    assert write.run("typed so far", session.pk) == 1
    session.refresh_from_db()
    assert session.feedback_draft == "typed so far"
    sql, params = rows.sql(session.pk)
    assert "SELECT" in sql and session.pk in params


def test_a_django_other_than_the_checked_one_is_a_system_check_warning(monkeypatch, settings):
    from django.core.checks import run_checks

    from annotate.server import prepared

    settings.PREPARED_QUERIES = True
    monkeypatch.setattr(prepared, "CHECKED_DJANGO", (4, 0))
    assert "feedback_lab.W003" in {message.id for message in run_checks()}
    settings.PREPARED_QUERIES = False
    assert "feedback_lab.W003" not in {message.id for message in run_checks()}
