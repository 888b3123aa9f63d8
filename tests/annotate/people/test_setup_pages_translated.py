"""The setup pages (models, people, a model's page, the token page) speak the admin's chosen language."""

import pytest
from django.urls import reverse
from django.utils import translation

from annotate.models import User
from tests.factories import ModelConfigFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _english_afterwards():
    yield
    translation.activate("en")


@pytest.mark.parametrize("page,heading", [("models", "添加模型"), ("people", "添加人员"),
                                          ("api-token-page", "API 令牌"), ("model-edit", "测试此模型")])
def test_setup_pages_in_chinese(client, page, heading):
    admin = UserFactory(role=User.Role.ADMIN, is_staff=True, language="zh-hans")
    model = ModelConfigFactory(name="zh-model")
    client.force_login(admin)
    url = reverse(page, args=[model.name]) if page == "model-edit" else reverse(page)
    html = client.get(url).content.decode()
    assert heading in html
