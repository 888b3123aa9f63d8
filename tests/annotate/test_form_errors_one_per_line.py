"""Form errors one per line everywhere (issue 31 item 4): two errors of one field, or of one form, are two list
items (templates/_errors.html), never run together as "characters.This password" or "retry_budgetapi_key_env"."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from annotate.models import User
from annotate.people.services import set_password_path
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def error_lists(html: str) -> list[list[str]]:
    """Each rendered error list, as the texts of its items."""
    return [re.findall(r"<li>(.*?)</li>", body, flags=re.DOTALL)
            for body in re.findall(r'<ul class="errorlist error"[^>]*>(.*?)</ul>', html, flags=re.DOTALL)]


def test_two_password_errors_are_two_lines_and_name_the_field():
    user = UserFactory(username="newbie")
    user.set_unusable_password()
    user.save()
    client = Client()
    url = client.get(set_password_path(user), follow=True).redirect_chain[-1][0]
    html = client.post(url, {"new_password1": "1234", "new_password2": "1234"}).content.decode()
    lists = error_lists(html)
    assert any(len(items) >= 2 and any("too short" in i for i in items) and any("too common" in i for i in items)
               for items in lists), lists
    assert re.search(r'<ul class="errorlist error" id="id_new_password2_errors">', html)
    assert "characters.This password" not in html


def test_two_settings_errors_of_a_model_are_two_lines():
    client = Client()
    client.force_login(UserFactory(username="ada", role=User.Role.ADMIN))
    settings = {"base_url": "http://vllm:8000/v1", "model": "qwen", "api_key_env": "sk-proj-1234567890abcdefXYZ",
                "retry_budget": -1}
    html = client.post("/setup/models/", {
        "name": "qwen2-vl", "backend": "openai", "backend_settings": json.dumps(settings), "generation": "{}",
        "queue": "", "soft_time_limit": 300, "time_limit": 360}).content.decode().replace("&#x27;", "'")
    field_errors = [items for items in error_lists(html) if any("api_key_env" in i for i in items)]
    assert field_errors and len(field_errors[0]) >= 2, error_lists(html)
    assert any(i.startswith("retry_budget") for i in field_errors[0])


def test_import_form_errors_are_one_per_line():
    client = Client()
    client.force_login(UserFactory(username="ada", role=User.Role.ADMIN))
    html = client.post("/imports/new/", {"name": "", "kind": "rows", "overlap": 0}).content.decode()
    lists = error_lists(html)
    assert len(lists) >= 3 and all(len(items) >= 1 for items in lists)  # file, name, overlap: each its own list
