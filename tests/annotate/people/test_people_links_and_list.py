"""The People page as a newcomer uses it (issue 31 item 3): the set-password links copied all at once, downloaded
as CSV and e-mailed (each person only their own); the set-password page names the account; the list keeps crowd
participants apart from the team, with search, a role filter and pages."""

from __future__ import annotations

import csv
import io
import re
from urllib.parse import unquote

import pytest
from django.core import mail
from django.test import Client

from annotate.models import User
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db


def create(admin_client, text, role="annotator"):
    response = admin_client.post("/setup/people/", {"role": role, "text": text})
    assert response.status_code == 200, response.content.decode()[:2000]
    return response.content.decode()


def shown_links(html: str) -> dict[str, str]:
    rows = re.findall(r"<tr><td>([^<]+)</td><td>[^<]*</td><td>[^<]*</td><td class=\"link-cell\"><code>([^<]+)</code>", html)
    return dict(rows)


def test_links_can_be_copied_at_once_and_downloaded_as_csv(admin_client):
    html = create(admin_client, "username,email\nann1,ann1@lab.org\nann2,\n-evil,\n")
    links = shown_links(html)
    assert set(links) == {"ann1", "ann2", "-evil"}
    copy_text = re.search(r'<textarea id="links-text"[^>]*>([^<]*)</textarea>', html).group(1)
    assert copy_text.splitlines() == [f"{name}\t{links[name]}" for name in ("ann1", "ann2", "-evil")]
    assert 'id="copy-links"' in html and "js/people_links.js" in html
    href = re.search(r'<a class="button" id="download-links" href="([^"]+)" download="set-password-links.csv">', html)
    assert href and href.group(1).startswith("data:text/csv;charset=utf-8,")
    rows = list(csv.reader(io.StringIO(unquote(href.group(1).split(",", 1)[1]))))
    assert rows[0] == ["username", "email", "role", "set_password_link"]
    assert rows[1] == ["ann1", "ann1@lab.org", "annotator", links["ann1"]]
    assert rows[3][0] == "'-evil"  # no spreadsheet runs it as a formula


def test_links_are_emailed_each_to_their_own_person(admin_client):
    html = create(admin_client, "username,email,first_name\nann1,ann1@lab.org,Ann\nann2,ann2@lab.org,\nann3,\n")
    assert "E-mail each of 2 people their link" in html
    response = admin_client.post("/setup/people/links/email/", {"username": ["ann1", "ann2", "ann3"]})
    page = response.content.decode()
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert "E-mailed 2 people each their own link: ann1, ann2." in page
    assert "No e-mail address, so no e-mail: ann3" in page
    assert sorted(m.to[0] for m in mail.outbox) == ["ann1@lab.org", "ann2@lab.org"]
    for message in mail.outbox:
        username = message.to[0].split("@")[0]
        own = shown_links(page)[username]
        assert own in message.body and f"Your username is {username}." in message.body
        others = [link for name, link in shown_links(page).items() if name != username]
        assert not any(link in message.body for link in others)
        # The e-mailed link opens the set-password page, which names the account.
        opened = Client().get(own.replace("http://testserver", ""), follow=True).content.decode()
        assert f"For the account <strong>{username}</strong>" in opened


def test_email_off_says_so_and_a_refusing_server_sends_nothing(admin_client, settings):
    settings.EMAIL_ENABLED = False
    html = create(admin_client, "username,email\nann1,ann1@lab.org\n")
    assert 'id="email-links"' not in html and 'id="email-off"' in html
    response = admin_client.post("/setup/people/links/email/", {"username": ["ann1"]})
    assert response.status_code == 400 and "E-mail is not set up on this server" in response.content.decode()
    assert mail.outbox == []
    settings.EMAIL_ENABLED = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens there
    response = admin_client.post("/setup/people/links/email/", {"username": ["ann1"]})
    assert response.status_code == 503 and "nothing was sent" in response.content.decode()
    assert shown_links(response.content.decode())["ann1"]  # the links are still there to copy


def test_only_admins_email_links(client):
    client.force_login(UserFactory(username="rita", role=User.Role.RESEARCHER))
    assert client.post("/setup/people/links/email/", {"username": ["rita"]}).status_code == 403
    assert mail.outbox == []


def test_the_list_keeps_crowd_participants_apart_with_search_role_and_pages(admin_client):
    batch = make_batch(models=[ModelConfigFactory()])
    UserFactory(username="rita", role=User.Role.RESEARCHER)
    for n in range(55):
        UserFactory(username=f"ann{n:02d}", role=User.Role.ANNOTATOR)
    UserFactory(username="prolific-x1", role=User.Role.ANNOTATOR, crowd_batch=batch)

    def names(html):
        body = html.split('<table id="people-list">')[1].split("</table>")[0]
        return re.findall(r"<tr><td>([^<]+)</td>", body)

    team = admin_client.get("/setup/people/").content.decode()
    assert "prolific-x1" not in names(team) and len(names(team)) == 50  # a page of 50
    assert "Team: admins, researchers, annotators (57)" in team and "(1)" in team
    second = admin_client.get("/setup/people/?page=2").content.decode()
    assert len(names(second)) == 7 and "page 2 of 2" in second
    assert names(admin_client.get("/setup/people/?role=researcher").content.decode()) == ["rita"]
    assert names(admin_client.get("/setup/people/?q=ann5").content.decode()) == [f"ann5{n}" for n in range(5)]
    crowd = admin_client.get("/setup/people/?who=crowd").content.decode()
    assert names(crowd) == ["prolific-x1"] and 'aria-current="page"' in crowd
    assert "Nobody matches." in admin_client.get("/setup/people/?q=zzz").content.decode()
    paged = admin_client.get("/setup/people/?role=annotator&page=1").content.decode()
    assert 'href="?role=annotator&amp;page=2"' in paged  # the filter stays on the next page


def test_the_email_is_in_the_persons_language_when_their_account_has_one(admin_client):
    create(admin_client, "username,email\nli,li@lab.org\n")
    User.objects.filter(username="li").update(language="zh-hans")
    admin_client.post("/setup/people/links/email/", {"username": ["li"]})
    assert mail.outbox[0].subject == "您的 Feedback Lab 账户：请设置密码"
    assert "您的用户名是 li。" in mail.outbox[0].body
