import pytest
from django.test import Client

from annotate.models import User
from tests.factories import UserFactory


@pytest.fixture
def admin_client(db):
    """A client logged in as an admin (the People pages are the admins')."""
    client = Client()
    client.force_login(UserFactory(username="ada", role=User.Role.ADMIN))
    return client
