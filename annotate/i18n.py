"""The pages' language: a logged-in user's saved choice, else the language cookie, else the browser's.

Django's LocaleMiddleware picks the cookie or Accept-Language; UserLanguageMiddleware (after the authentication
middleware) then applies the user's own choice, so an English-speaking annotator on a Chinese browser reads
English everywhere they log in. The top bar's chooser posts to `language_set`, Django's `set_language` view
(which sets the cookie) that also saves the choice on the user.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.http import require_POST
from django.views.i18n import set_language

# The chooser's "browser" entry: forget the saved choice and follow Accept-Language again.
FOLLOW_BROWSER = ""


class UserLanguageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user.language:
            translation.activate(user.language)
            request.LANGUAGE_CODE = translation.get_language()
        return self.get_response(request)


@require_POST
def language_set(request: HttpRequest) -> HttpResponse:
    language = request.POST.get("language", "")
    response = set_language(request)
    if language == FOLLOW_BROWSER:
        # set_language only redirects for a code it does not know; the cookie must go too.
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, path=settings.LANGUAGE_COOKIE_PATH,
                               domain=settings.LANGUAGE_COOKIE_DOMAIN)
    elif language not in dict(settings.LANGUAGES):
        return response  # an unknown code changes nothing (set_language ignores it too)
    if request.user.is_authenticated and request.user.language != language:
        request.user.language = language
        request.user.save(update_fields=["language"])
    return response
