import pytest

from annotate.models import User
from tests.factories import ModelConfigFactory, UserFactory


@pytest.fixture
def annotator(db):
    return UserFactory(username="alice", role=User.Role.ANNOTATOR)


@pytest.fixture
def researcher(db):
    return UserFactory(username="rita", role=User.Role.RESEARCHER)


@pytest.fixture
def outsider(db):
    return UserFactory(username="oscar", role=User.Role.ANNOTATOR)


@pytest.fixture
def simulated_model(db):
    return ModelConfigFactory(name="sim-student", backend_settings={"chunk_delay": 0})


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()
