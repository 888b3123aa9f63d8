"""Pages: admins create people in bulk (each new account's set-password link shown once), deactivate them and send
new links; every user manages their own API token; anyone with a link sets their password."""

from __future__ import annotations

import csv
import io
from urllib.parse import quote

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotate.errors import ApplicationError, InvalidFields, NotFound
from annotate.models import User
from annotate.people import selectors, services
from annotate.people.access import admin_required
from annotate.people.mail import Sent, set_password_links_email
from annotate.people.pages import form_add_problems
from annotate.people.rows import person_rows_from_csv

CSV_HELP = "A header line with username and, if you like, email, first_name, last_name; then one person a line."


class PeopleForm(forms.Form):
    role = forms.ChoiceField(choices=User.Role.choices, initial=User.Role.ANNOTATOR,
                             help_text=_("Every person of this list gets this role"))
    file = forms.FileField(required=False, label=_("CSV file"), help_text=CSV_HELP)
    text = forms.CharField(required=False, label=_("Or paste the CSV"), widget=forms.Textarea(attrs={"rows": 6}),
                           help_text=_("e.g. username,email ⏎ alice,alice@lab.org"))

    def clean(self):
        data = super().clean()
        if not data.get("file") and not (data.get("text") or "").strip():
            raise forms.ValidationError("Choose a CSV file or paste the CSV text.")
        if data.get("file") and (data.get("text") or "").strip():
            raise forms.ValidationError("Give either a file or pasted text, not both.")
        return data


PAGE_SIZE = 50


@admin_required
def people_page(request):
    form = PeopleForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = data["file"]
        try:
            rows = person_rows_from_csv(upload.read() if upload else data["text"])
            created = services.users_create_bulk(rows=rows, role=data["role"])
        except InvalidFields as error:
            form_add_problems(form, error)
        else:
            links = [(c.user, request.build_absolute_uri(c.set_password_path)) for c in created]
            return _links_page(request, links)
    crowd = request.GET.get("who") == "crowd"
    query, role = request.GET.get("q", "").strip()[:150], request.GET.get("role", "")
    users = selectors.people_page_list(crowd=crowd, query=query, role=role).only(
        "username", "email", "role", "is_active", "last_login", "pseudonym", "password", "crowd_batch")
    page = Paginator(users, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "annotate/people/people.html", {
        "form": form, "users": page, "crowd": crowd, "query": query, "role": role, "roles": User.Role.choices,
        "team_count": selectors.people_page_list(crowd=False).count(),
        "crowd_count": selectors.people_page_list(crowd=True).count(),
    }, status=400 if form.errors else 200)


def _user_or_404(username: str) -> User:
    try:
        return selectors.user_get(username)
    except NotFound as error:
        raise Http404(error.message) from None


@require_POST
@admin_required
def person_deactivate(request, username: str):
    user = _user_or_404(username)
    try:
        services.user_deactivate(user=user, by=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, gettext("%(name)s is deactivated; their work is kept.") % {"name": user.username})
    return redirect("people")


@require_POST
@admin_required
def person_reactivate(request, username: str):
    user = services.user_reactivate(user=_user_or_404(username))
    messages.success(request, gettext("%(name)s can log in again.") % {"name": user.username})
    return redirect("people")


@require_POST
@admin_required
def person_link(request, username: str):
    user = _user_or_404(username)
    try:
        path = services.user_set_password_link(user=user)
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect("people")
    return _links_page(request, [(user, request.build_absolute_uri(path))], new_link=True)


def _links_page(request, links, *, new_link: bool = False, sent: Sent | None = None, status: int = 200):
    """The links, shown this once: a table, all of them as text to copy at once, a CSV download (a data: link, no
    copy kept on the server) and a button that e-mails each person their own."""
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["username", "email", "role", "set_password_link"])
    for person, link in links:
        writer.writerow([csv_cell(person.username), csv_cell(person.email), person.role, link])
    response = render(request, "annotate/people/created.html", {
        "links": links, "new_link": new_link, "timeout_days": _timeout_days(), "sent": sent,
        "copy_text": "\n".join(f"{person.username}\t{link}" for person, link in links),
        "csv_url": "data:text/csv;charset=utf-8," + quote(table.getvalue(), safe=""),
        "email_enabled": settings.EMAIL_ENABLED, "with_email": sum(1 for person, _ in links if person.email)},
        status=status)
    response["Cache-Control"] = "no-store"  # the links open accounts: never from a cache
    return response


def csv_cell(text: str) -> str:
    """Text no spreadsheet runs as a formula (OWASP "CSV injection"; the exports' rule, evaluation's csv_cell)."""
    return "'" + text if text.startswith(("=", "+", "-", "@", "\t", "\r")) else text


def _timeout_days() -> int:
    return settings.PASSWORD_RESET_TIMEOUT // 86400


@require_POST
@admin_required
def people_links_email(request):
    """E-mail fresh links to the people of a links page (each their own); the page is shown again with them."""
    names = request.POST.getlist("username")[:services.MAX_ROWS]
    people = list(User.objects.filter(username__in=names, is_active=True).order_by("username"))
    links = [(person, request.build_absolute_uri(services.set_password_path(person))) for person in people]
    try:
        sent = set_password_links_email(links=links, timeout_days=_timeout_days())
    except ApplicationError as error:
        messages.error(request, error.message)
        return _links_page(request, links, status=503 if error.code == "email_failed" else 400)
    return _links_page(request, links, sent=sent)


@login_required
def token_page(request):
    """Create (or replace) and revoke your API token; a new key is shown on this answer only."""
    key = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "issue":
            try:
                key = services.token_issue(user=request.user)
            except ApplicationError as error:
                messages.error(request, error.message)
        elif action == "revoke":
            revoked = services.token_revoke(user=request.user)
            messages.success(request, gettext("Your API token is revoked.") if revoked else gettext("You had no API token."))
            return redirect("api-token-page")
        else:
            messages.error(request, gettext("Unknown action: use Create or Revoke."))
            return redirect("api-token-page")
    token = selectors.token_get(request.user)
    response = render(request, "annotate/people/token.html", {"key": key, "token": token})
    response["Cache-Control"] = "no-store"  # the key must not stay in a cache
    return response


class SetPasswordView(auth_views.PasswordResetConfirmView):
    """Django's one-time set-password form; a deactivated account's link does not open."""

    template_name = "annotate/people/set_password.html"
    success_url = reverse_lazy("password-set-done")

    def get_user(self, uidb64):
        user = super().get_user(uidb64)
        return user if user is not None and user.is_active else None


class SetPasswordDoneView(auth_views.PasswordResetCompleteView):
    template_name = "annotate/people/set_password_done.html"
