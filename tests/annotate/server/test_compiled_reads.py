"""Reads compiled once per process (annotate.server.compiled_reads): the SQL sent is the one the ORM would compile for
the request's own values, a queryset whose SQL is not a function of its parameters is refused, a value outside what
the kept SQL is proven for goes to the ORM, and the per-call check stops a statement that no longer compiles the
same."""

import pytest
from django.test import override_settings
from django.utils import timezone

from annotate.models import Assignment, User
from annotate.server import compiled_reads
from tests.compiled_reads_checks import postgresql_only

pytestmark = [
    pytest.mark.django_db,
    postgresql_only,
]


def by_pk(annotator_id):
    return User.objects.filter(pk=annotator_id).values_list("username")


def test_a_read_is_compiled_once_and_sent_with_each_requests_values(annotator, outsider, django_assert_num_queries):
    compiled_reads._statements.pop((by_pk, ()), None)
    with django_assert_num_queries(1):  # compiling sends nothing
        assert compiled_reads.rows(by_pk, (), {"annotator_id": annotator.pk}) == [("alice",)]
    assert compiled_reads.rows(by_pk, (), {"annotator_id": outsider.pk}) == [("oscar",)]
    assert compiled_reads.rows(by_pk, (), {"annotator_id": 10**9}) == []
    assert compiled_reads._statements[(by_pk, ())].slots == ("annotator_id",)


def limited(annotator_id):
    return User.objects.filter(pk__gte=0).values_list("id")[:annotator_id]  # the value lands in the SQL (LIMIT n)


def leased_before_now(annotator_id):
    return Assignment.objects.filter(annotator_id=annotator_id, lease_expires_at__lt=timezone.now()).values_list("id")


@pytest.mark.parametrize("build", [limited, leased_before_now])
def test_a_queryset_whose_sql_is_not_its_parameters_alone_is_refused(build, annotator):
    with pytest.raises(compiled_reads.CompiledReadError, match=build.__name__):
        compiled_reads.rows(build, (), {"annotator_id": annotator.pk})
    assert (build, ()) not in compiled_reads._statements


def test_the_check_stops_a_statement_kept_from_a_queryset_that_now_compiles_differently(annotator):
    rule = {"active_only": False}

    def people(annotator_id):
        users = User.objects.filter(pk=annotator_id)
        return (users.filter(is_active=True) if rule["active_only"] else users).values_list("id")

    assert compiled_reads.rows(people, (), {"annotator_id": annotator.pk}) == [(annotator.pk,)]
    rule["active_only"] = True  # as a Django upgrade or an edited rule would change the SQL under the kept one
    with override_settings(COMPILED_READS_CHECK=True), pytest.raises(compiled_reads.CompiledReadError,
                                                                            match="not the kept"):
        compiled_reads.rows(people, (), {"annotator_id": annotator.pk})


def test_an_integer_beyond_what_the_sql_is_proven_for_goes_to_the_orm(annotator):
    assert compiled_reads.rows(by_pk, (), {"annotator_id": 10**26}) is None
    assert compiled_reads.rows(by_pk, (), {"annotator_id": -1}) is None
    assert compiled_reads.rows(by_pk, (), {"annotator_id": annotator.pk}) == [("alice",)]


def by_name(username):
    return User.objects.filter(username=username).values_list("id")


def test_a_string_is_a_value_like_an_id(annotator):
    assert compiled_reads.rows(by_name, (), {"username": "alice"}) == [(annotator.pk,)]
    assert compiled_reads.rows(by_name, (), {"username": "nobody'; --"}) == []


def test_off_it_sends_nothing_of_its_own(annotator):
    with override_settings(COMPILED_READS=False):
        assert compiled_reads.rows(by_pk, (), {"annotator_id": annotator.pk}) is None
