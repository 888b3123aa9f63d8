"""Languages: English by default, Simplified Chinese by the browser's Accept-Language, a user's own choice over
the browser's, the top bar's chooser, translated API messages with untranslated codes, the JavaScript catalog,
and complete catalogs (every msgid translated, none fuzzy, the compiled .mo matching its .po)."""

import json
import re
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import translation

from annotate.models import User
from annotate.queue.services import assignment_next
from tests.factories import UserFactory, make_batch

pytestmark = pytest.mark.django_db

CHINESE_BROWSER = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh-Hans;q=0.9,en;q=0.5"}
LOCALE_DIR = Path(settings.BASE_DIR) / "locale"
CATALOGS = sorted(LOCALE_DIR.glob("*/LC_MESSAGES/*.po"))


@pytest.fixture(autouse=True)
def _back_to_english():
    """A request leaves its language active in this thread; later tests expect the default."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def session(annotator, simulated_model, no_dispatch):
    return assignment_next(annotator=annotator, batch=make_batch(models=[simulated_model])).session


def html_lang(response) -> str:
    return re.search(r'<html lang="([^"]+)"', response.content.decode())[1]


def test_login_page_follows_the_browser(client):
    english = client.get(reverse("login"))
    assert html_lang(english) == "en" and "<h1>Log in</h1>" in english.content.decode()
    chinese = client.get(reverse("login"), **CHINESE_BROWSER)
    body = chinese.content.decode()
    assert html_lang(chinese) == "zh-hans" and chinese.headers["Content-Language"] == "zh-hans"
    assert "<h1>登录</h1>" in body and "用户名" in body and "Log in" not in body


def test_session_page_in_chinese_for_a_chinese_browser(client, annotator, session):
    client.force_login(annotator)
    body = client.get(reverse("session-page", args=[session.id]), **CHINESE_BROWSER).content.decode()
    assert ">发送反馈</button>" in body and ">对话</h2>" in body and "此批次中的第 1 个条目" in body
    assert "图片无法加载或无法看清" in body  # a skip reason shown translated...
    assert 'value="The image does not load or cannot be read"' in body  # ...and sent (and stored) in English
    assert "Send feedback" not in body
    assert session.task.question in body or json.dumps(session.task.question)[1:-1] in body  # data stays as is


def test_a_users_english_wins_over_a_chinese_browser(client, annotator, session):
    annotator.language = "en"
    annotator.save(update_fields=["language"])
    client.force_login(annotator)
    response = client.get(reverse("session-page", args=[session.id]), **CHINESE_BROWSER)
    assert html_lang(response) == "en" and ">Send feedback</button>" in response.content.decode()


def test_a_users_chinese_wins_over_an_english_browser(client, annotator):
    annotator.language = "zh-hans"
    annotator.save(update_fields=["language"])
    client.force_login(annotator)
    response = client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="en")
    assert html_lang(response) == "zh-hans" and "我的任务" in response.content.decode()


def test_the_chooser_switches_and_saves_the_choice(client, annotator):
    client.force_login(annotator)
    response = client.post(reverse("set_language"), {"language": "zh-hans", "next": "/?annotate=1"})
    assert response.status_code == 302 and response.headers["Location"] == "/?annotate=1"
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    annotator.refresh_from_db()
    assert annotator.language == "zh-hans"
    assert "我的任务" in client.get(reverse("home")).content.decode()

    # Another device (no cookie) with an English browser: the saved choice still applies.
    elsewhere = Client()
    elsewhere.force_login(annotator)
    assert html_lang(elsewhere.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="en")) == "zh-hans"

    # "Browser's language" forgets the choice and the cookie.
    client.post(reverse("set_language"), {"language": "", "next": "/"})
    annotator.refresh_from_db()
    assert annotator.language == ""
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == ""  # deleted: expired, empty
    assert html_lang(client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="en")) == "en"


def test_the_chooser_ignores_an_unknown_language(client, annotator):
    client.force_login(annotator)
    response = client.post(reverse("set_language"), {"language": "xx", "next": "/"})
    assert response.status_code == 302
    annotator.refresh_from_db()
    assert annotator.language == ""
    assert settings.LANGUAGE_COOKIE_NAME not in client.cookies


def test_the_chooser_works_before_login_with_the_cookie_only(client):
    client.post(reverse("set_language"), {"language": "zh-hans", "next": "/login/"})
    assert "<h1>登录</h1>" in client.get(reverse("login")).content.decode()
    assert not User.objects.exclude(language="").exists()


def test_the_chooser_refuses_get(client):
    assert client.get(reverse("set_language"), {"language": "zh-hans"}).status_code == 405


def test_top_bar_chooser_shows_the_users_choice(client):
    user = UserFactory(username="li", language="zh-hans")
    client.force_login(user)
    body = client.get(reverse("home")).content.decode()
    assert re.search(r'<option value="zh-hans" lang="zh-hans" selected>简体中文</option>', body)
    assert '<option value="">浏览器语言</option>' in body


def test_api_messages_are_translated_and_codes_are_not(client, annotator, session):
    from tests.annotate.helpers import run_pending_round

    run_pending_round(session)
    annotator.language = "zh-hans"
    annotator.save(update_fields=["language"])
    client.force_login(annotator)
    response = client.post(reverse("api-session-feedback", args=[session.id]),
                           {"feedback": "  ", "client_request_id": "r1"}, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"detail": "反馈为空：请告诉模型哪里错了。", "code": "empty_feedback"}
    missing = client.get(reverse("api-session", args=[999999]))
    assert missing.status_code == 404 and missing.json()["detail"] == "会话 999999 不存在或不属于你。"


def test_status_labels_follow_the_language(annotator, session):
    assert session.get_status_display() == "Model is answering"
    with translation.override("zh-hans"):
        assert session.get_status_display() == "模型正在作答"
        assert annotator.get_role_display() == "标注员"


def test_javascript_catalog_serves_the_session_pages_strings(client):
    response = client.get(reverse("javascript-catalog"), **CHINESE_BROWSER)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/javascript")
    body = response.content.decode()
    # The catalog is JSON inside the script (non-ASCII escaped): look for the entries as JSON writes them.
    assert json.dumps({"first answer": "首次回答"})[1:-1] in body
    assert json.dumps({"round %(index)s of %(max)s": "第 %(index)s 轮，共 %(max)s 轮"})[1:-1] in body
    assert "April" not in body  # ours only, not the admin's whole catalog
    english = client.get(reverse("javascript-catalog")).content.decode()
    assert "first answer" not in english  # English needs no catalog: gettext returns the msgid


def test_every_page_loads_the_catalog_before_its_scripts(client, annotator, session):
    client.force_login(annotator)
    body = client.get(reverse("session-page", args=[session.id])).content.decode()
    catalog, script = body.index(reverse("javascript-catalog")), body.index("js/session.js")
    assert catalog < script


def test_there_are_catalogs_for_every_language_but_english():
    languages = {code for code, _ in settings.LANGUAGES} - {"en"}
    shipped = {translation.to_language(p.parent.parent.name) for p in CATALOGS}
    assert shipped == languages
    assert {p.stem for p in CATALOGS} == {"django", "djangojs"}


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_catalog_is_complete_and_compiled(path):
    po = polib.pofile(str(path))
    assert not po.metadata_is_fuzzy
    assert [e.msgid for e in po.untranslated_entries()] == []
    assert [e.msgid for e in po.fuzzy_entries()] == []
    for entry in po.translated_entries():
        wanted = sorted(re.findall(r"%\(\w+\)s", entry.msgid))
        for text in [entry.msgstr, *entry.msgstr_plural.values()]:
            if text:
                assert sorted(re.findall(r"%\(\w+\)s", text)) == wanted, entry.msgid
    # The .mo is committed (CI may lack gettext): it must hold exactly what the .po says.
    mo = polib.mofile(str(path.with_suffix(".mo")))
    compiled = {(e.msgctxt, e.msgid): (e.msgstr, e.msgstr_plural) for e in mo if e.msgid}
    written = {(e.msgctxt, e.msgid): (e.msgstr, {int(k): v for k, v in e.msgstr_plural.items()})
               for e in po.translated_entries()}
    assert compiled == {k: (v[0], {int(n): s for n, s in v[1].items()}) for k, v in written.items()}


def test_researcher_pages_follow_the_language(client, researcher):
    researcher.language = "zh-hans"
    researcher.save(update_fields=["language"])
    client.force_login(researcher)
    body = client.get(reverse("researcher-home")).content.decode()
    assert "<h1>批次</h1>" in body and ">研究</a>" in body
