import pytest

from tests.fuzz import harness
from tests.fuzz.world import build_world


@pytest.fixture(scope="session")
def fuzz_schema(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        return harness.load_schema()


@pytest.fixture
def fuzz_world(db, tmp_path, redis_url):
    """The personas and objects of one fuzz test. The test's transaction is never committed, so the jobs it
    creates are never sent; the queues of this Redis are emptied afterwards all the same."""
    from tests import stack

    yield build_world(tmp_path)
    stack.purge_queues()
