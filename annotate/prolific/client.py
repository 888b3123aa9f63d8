"""The one module that talks to Prolific's API (v1, https://api.prolific.com/api/v1/), over httpx.

The token comes from the environment variable named by settings.PROLIFIC_TOKEN_ENV, read at each call: it is never
stored, logged or put in an error. Every answer (or its absence) is handed to ``on_call`` for the audit trail.
Errors are ProlificError subclasses whose message is a sentence for the researcher. A refused request (429) is
retried after Prolific's Retry-After; outages (5xx, no answer) are retried only for calls safe to repeat
(``retry_safe``): a bonus payment is never sent twice by this module.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings
from django.utils.translation import gettext as _

from annotate.errors import ApplicationError

API_VERSION = "v1"
CallRecorder = Callable[[str, str, Any, "int | None", Any, str], None]


class ProlificError(ApplicationError):
    http_status = 502
    code = "prolific_error"


class ProlificNotConfigured(ProlificError):
    http_status = 409
    code = "prolific_not_configured"


class ProlificAuthError(ProlificError):
    code = "prolific_auth"


class ProlificNotFound(ProlificError):
    code = "prolific_not_found"


class ProlificInvalid(ProlificError):
    http_status = 400
    code = "prolific_invalid"


class ProlificRateLimited(ProlificError):
    http_status = 503
    code = "prolific_rate_limited"


class ProlificUnavailable(ProlificError):
    http_status = 503
    code = "prolific_unavailable"


def token_from_environment() -> str:
    name = settings.PROLIFIC_TOKEN_ENV
    token = os.environ.get(name, "").strip()
    if not token:
        raise ProlificNotConfigured(_("No Prolific API token: set the environment variable %(name)s on the web "
                                      "server and the workers, then restart them.") % {"name": name})
    return token


def _flatten(detail: Any, prefix: str = "") -> list[str]:
    """Prolific's validation answers ({"error": {"detail": {"field": ["why"]}}} and the like) as 'field: why'."""
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            if key in ("status", "error_code"):
                continue  # numbers for machines: the status is said by the error's kind already
            if key in ("error", "detail", "title", "additional_information"):
                out += _flatten(value, prefix)
            else:
                out += _flatten(value, f"{prefix}{key}: " if not prefix else f"{prefix}{key} ")
        return out
    if isinstance(detail, list):
        return [line for item in detail for line in _flatten(item, prefix)]
    return [f"{prefix}{detail}".strip()] if str(detail).strip() else []


def _retry_after(response: httpx.Response) -> float:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return 1.0


@dataclass
class ProlificClient:
    base_url: str
    token: str
    on_call: CallRecorder | None = None
    timeout: float = 20.0
    max_attempts: int = 3
    max_wait: float = 30.0  # a longer Retry-After is reported instead of waited for
    sleep: Callable[[float], None] = time.sleep
    transport: httpx.BaseTransport | None = None

    @classmethod
    def from_settings(cls, *, on_call: CallRecorder | None = None) -> ProlificClient:
        return cls(base_url=settings.PROLIFIC_API_URL, token=token_from_environment(), on_call=on_call,
                   max_wait=float(settings.PROLIFIC_MAX_RETRY_WAIT))

    def _url(self, path: str) -> str:
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")

    def request(self, method: str, path: str, body: Any = None, *, params: dict | None = None,
                retry_safe: bool = False) -> Any:
        """The JSON Prolific answers (None for an empty body); ProlificError otherwise."""
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        for attempt in range(1, self.max_attempts + 1):
            try:
                with httpx.Client(timeout=self.timeout, transport=self.transport) as http:
                    response = http.request(method, self._url(path), json=body, params=params, headers=headers)
            except httpx.HTTPError as error:
                self._record(method, path, body, None, None, type(error).__name__)
                if retry_safe and attempt < self.max_attempts:
                    self.sleep(min(2.0 ** attempt / 4, self.max_wait))
                    continue
                raise ProlificUnavailable(_("Prolific did not answer (%(why)s). Nothing was changed by this try if "
                                            "it never reached Prolific; try again in a few minutes.")
                                          % {"why": type(error).__name__}) from None
            answer = self._json(response)
            self._record(method, path, body, response.status_code, answer, "")
            if response.status_code == 429:
                wait = _retry_after(response)
                # A 429 means Prolific refused the request: sending it again is safe, whatever it was.
                if attempt < self.max_attempts and wait <= self.max_wait:
                    self.sleep(wait)
                    continue
                raise ProlificRateLimited(_("Prolific asks us to slow down: try again in %(s)s seconds.")
                                          % {"s": int(wait + 0.999)})
            if response.status_code >= 500:
                if retry_safe and attempt < self.max_attempts:
                    self.sleep(min(2.0 ** attempt / 4, self.max_wait))
                    continue
                raise ProlificUnavailable(_("Prolific is having trouble (error %(code)s). Try again in a few "
                                            "minutes.") % {"code": response.status_code})
            if response.status_code in (401, 403):
                raise ProlificAuthError(
                    _("Prolific refused the API token (%(code)s): check that %(name)s holds a current token of the "
                      "right workspace.") % {"code": response.status_code, "name": settings.PROLIFIC_TOKEN_ENV})
            if response.status_code == 404:
                raise ProlificNotFound(_("Prolific does not know %(what)s: it may have been deleted on Prolific's "
                                         "site, or belong to another workspace.") % {"what": path})
            if response.status_code >= 400:
                reasons = "; ".join(line.rstrip(".") for line in _flatten(answer)) or response.reason_phrase
                raise ProlificInvalid(_("Prolific refused this: %(why)s.") % {"why": reasons.rstrip(".")})
            return answer
        raise ProlificUnavailable(_("Prolific did not answer."))  # pragma: no cover (the loop returns or raises)

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            return {"text": response.text[:500]}

    def _record(self, method: str, path: str, body: Any, status: int | None, answer: Any, error: str) -> None:
        if self.on_call is not None:
            self.on_call(method, path, body, status, answer, error)

    # --- the endpoints used (docs/operations/prolific.md lists them) ---------------------------------------------

    def me(self) -> dict:
        return self.request("GET", "users/me/", retry_safe=True)

    def workspaces(self) -> list[dict]:
        return list(self.paginate("workspaces/"))

    def study_create(self, body: dict) -> dict:
        return self.request("POST", "studies/", body)

    def study_get(self, study_id: str) -> dict:
        return self.request("GET", f"studies/{study_id}/", retry_safe=True)

    def study_update(self, study_id: str, body: dict) -> dict:
        return self.request("PATCH", f"studies/{study_id}/", body, retry_safe=True)

    def study_transition(self, study_id: str, action: str) -> dict:
        return self.request("POST", f"studies/{study_id}/transition/", {"action": action}, retry_safe=True)

    def submissions(self, study_id: str) -> Iterator[dict]:
        return self.paginate("submissions/", params={"study": study_id})

    def submission_get(self, submission_id: str) -> dict:
        return self.request("GET", f"submissions/{submission_id}/", retry_safe=True)

    def submission_transition(self, submission_id: str, body: dict) -> dict:
        # Prolific documents this transition as idempotent: the same request twice is ignored the second time.
        return self.request("POST", f"submissions/{submission_id}/transition/", body, retry_safe=True)

    def bonuses_set_up(self, study_id: str, csv_bonuses: str) -> dict:
        # Setting up pays nothing, so a repeat leaves at most an unpaid set-up behind.
        return self.request("POST", "submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv_bonuses},
                            retry_safe=True)

    def bonuses_pay(self, bulk_id: str) -> Any:
        # Not idempotent (Prolific's docs): never repeated here on an outage.
        return self.request("POST", f"bulk-bonus-payments/{bulk_id}/pay/", {})

    def paginate(self, path: str, params: dict | None = None) -> Iterator[dict]:
        """Every result of a list endpoint, following its pages ({"results": [...], "_links": {"next": ...}})."""
        params = dict(params or {})
        page = 1
        while True:
            answer = self.request("GET", path, params={**params, "page": page}, retry_safe=True) or {}
            if isinstance(answer, list):
                yield from answer
                return
            yield from answer.get("results", [])
            following = (answer.get("_links") or {}).get("next") or {}
            if not (following.get("href") if isinstance(following, dict) else following):
                return
            page += 1
