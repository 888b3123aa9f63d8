"""A small stand-in for Prolific's API (v1) on 127.0.0.1, for tests and the browser story: the real paths under
/api/v1/, JSON bodies, status codes (400 with Prolific's validation shape, 401, 404, 429 with Retry-After),
paginated lists ({"results", "_links": {"next"}, "meta"}) and a ledger of every bonus actually paid. Paying the
same bulk bonus twice pays twice, as Prolific's docs warn, so a test can see a double payment if one happens.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from tests.fake_http import JsonHandler

PREFIX = "/api/v1/"
REJECTION_CATEGORIES = {"TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK",
                        "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER"}
TRANSITIONS = {"PUBLISH": ("UNPUBLISHED", "ACTIVE"), "PAUSE": ("ACTIVE", "PAUSED"), "START": ("PAUSED", "ACTIVE"),
               "STOP": (None, "COMPLETED")}
FEE = Decimal("0.4286")  # the service fee share on top of a reward (a round figure for tests)


@dataclass
class FakeProlific:
    token: str = "fake-prolific-token"
    page_size: int = 2
    workspace: dict = field(default_factory=lambda: {"id": "ws-1", "title": "Feedback Lab workspace"})
    studies: dict[str, dict] = field(default_factory=dict)
    submissions: dict[str, dict] = field(default_factory=dict)
    bulk_bonuses: dict[str, dict] = field(default_factory=dict)
    ledger: list[dict] = field(default_factory=list)  # every bonus paid: participant_id, amount (cents), bulk id
    # (status, headers, body) to answer the next requests with, before anything else
    failures: list[tuple[int, dict, dict]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    base_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):022x}"

    def rate_limit(self, times: int = 1, retry_after: str = "0") -> None:
        self.failures += [(429, {"Retry-After": retry_after}, {"error": {"detail": "Request was throttled."}})] * times

    # --- what participants do on Prolific's side ---------------------------------------------------------------

    def start_submission(self, study_id: str, participant_id: str) -> dict:
        submission = {"id": self.new_id("sub"), "study_id": study_id, "participant": participant_id,
                      "participant_id": participant_id, "status": "ACTIVE", "started_at": "2026-01-01T10:00:00Z",
                      "completed_at": None, "is_complete": False, "bonus_payments": [], "study_code": None}
        self.submissions[submission["id"]] = submission
        return submission

    def set_status(self, participant_id: str, status: str) -> None:
        for submission in self.submissions.values():
            if submission["participant_id"] == participant_id:
                submission["status"] = status
                submission["is_complete"] = status in ("AWAITING REVIEW", "APPROVED", "REJECTED")

    def paid_to(self, participant_id: str) -> list[int]:
        return [row["amount"] for row in self.ledger if row["participant_id"] == participant_id]


def _validation(detail: dict) -> tuple[int, dict]:
    return 400, {"error": {"status": 400, "error_code": 140001, "title": "Request validation failed.",
                           "detail": detail}}


def _study_answer(study: dict) -> dict:
    return dict(study)


class _Routes:
    def __init__(self, fake: FakeProlific):
        self.fake = fake

    def route(self, method: str, path: str, query: dict, body: dict) -> tuple[int, dict | list | None]:
        parts = [p for p in path[len(PREFIX):].split("/") if p]
        fake = self.fake
        match method, parts:
            case "GET", ["users", "me"]:
                return 200, {"id": "researcher-1", "name": "Test Researcher", "email": "r@example.org",
                             "current_workspace_id": fake.workspace["id"]}
            case "GET", ["workspaces"]:
                return 200, {"results": [fake.workspace], "_links": {"next": {"href": None}}, "meta": {"count": 1}}
            case "POST", ["studies"]:
                return self.study_create(body)
            case "GET", ["studies", sid]:
                return (200, _study_answer(fake.studies[sid])) if sid in fake.studies else self.missing()
            case "PATCH", ["studies", sid]:
                return self.study_update(sid, body)
            case "POST", ["studies", sid, "transition"]:
                return self.study_transition(sid, body)
            case "GET", ["submissions"]:
                return self.submission_list(query)
            case "GET", ["submissions", sub]:
                return (200, fake.submissions[sub]) if sub in fake.submissions else self.missing()
            case "POST", ["submissions", "bonus-payments"]:
                return self.bonus_set_up(body)
            case "POST", ["submissions", sub, "transition"]:
                return self.submission_transition(sub, body)
            case "POST", ["bulk-bonus-payments", bulk, "pay"]:
                return self.bonus_pay(bulk)
        return self.missing()

    @staticmethod
    def missing() -> tuple[int, dict]:
        return 404, {"error": {"status": 404, "title": "Not found.", "detail": "Not found."}}

    def study_create(self, body: dict) -> tuple[int, dict]:
        required = ("name", "description", "external_study_url", "estimated_completion_time", "reward",
                    "total_available_places", "completion_codes")
        problems = {name: ["This field is required."] for name in required if body.get(name) in (None, "", [])}
        if not problems and int(body["reward"]) < 1:
            problems["reward"] = ["Ensure this value is greater than or equal to 1."]
        if not problems and "{%PROLIFIC_PID%}" not in body["external_study_url"]:
            problems["external_study_url"] = ["The URL must carry {%PROLIFIC_PID%}."]
        if problems:
            return _validation(problems)
        study = {**body, "id": self.fake.new_id("stu"), "status": "UNPUBLISHED",
                 "total_cost": self.cost(body["reward"], body["total_available_places"])}
        self.fake.studies[study["id"]] = study
        return 201, _study_answer(study)

    @staticmethod
    def cost(reward: int, places: int) -> int:
        return int((Decimal(reward) * (1 + FEE)).quantize(Decimal(1)) * places)

    def study_update(self, sid: str, body: dict) -> tuple[int, dict]:
        study = self.fake.studies.get(sid)
        if study is None:
            return self.missing()
        if "total_available_places" in body:
            places = body["total_available_places"]
            if not isinstance(places, int) or places < study["total_available_places"]:
                return _validation({"total_available_places": ["Places can only be increased."]})
            study["total_available_places"] = places
            study["total_cost"] = self.cost(study["reward"], places)
        return 200, _study_answer(study)

    def study_transition(self, sid: str, body: dict) -> tuple[int, dict]:
        study = self.fake.studies.get(sid)
        if study is None:
            return self.missing()
        action = body.get("action")
        if action not in TRANSITIONS:
            return _validation({"action": [f'"{action}" is not a valid choice.']})
        before, after = TRANSITIONS[action]
        if before is not None and study["status"] != before:
            return 400, {"error": {"status": 400, "title": "Invalid transition.",
                                   "detail": f"The study is {study['status']}: it cannot {action}."}}
        study["status"] = after
        return 200, _study_answer(study)

    def submission_list(self, query: dict) -> tuple[int, dict]:
        sid = (query.get("study") or [""])[0]
        if not sid:
            return _validation({"study": ["A study id is required."]})
        rows = [s for s in self.fake.submissions.values() if s["study_id"] == sid]
        page = int((query.get("page") or ["1"])[0])
        size = self.fake.page_size
        chunk = rows[(page - 1) * size: page * size]
        following = f"{self.fake.base_url}{PREFIX}submissions/?study={sid}&page={page + 1}"
        return 200, {"results": chunk, "meta": {"count": len(rows)},
                     "_links": {"next": {"href": following if page * size < len(rows) else None}}}

    def submission_transition(self, sub: str, body: dict) -> tuple[int, dict]:
        submission = self.fake.submissions.get(sub)
        if submission is None:
            return self.missing()
        action = body.get("action")
        target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action or "")
        if target is None:
            return _validation({"action": [f'"{action}" is not a valid choice.']})
        if submission["status"] == target:
            return 200, submission  # idempotent, as Prolific documents
        if action == "REJECT":
            problems = {}
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                problems["rejection_category"] = ["A valid rejection category is required."]
            if len(body.get("message") or "") < 100:
                problems["message"] = ["The message must be at least 100 characters."]
            if problems:
                return _validation(problems)
        if submission["status"] != "AWAITING REVIEW":
            return 400, {"error": {"status": 400, "title": "Invalid transition.",
                                   "detail": f"A submission {submission['status']} cannot be {target.lower()}."}}
        submission["status"] = target
        return 200, submission

    def bonus_set_up(self, body: dict) -> tuple[int, dict]:
        sid = body.get("study_id")
        if sid not in self.fake.studies:
            return _validation({"study_id": ["Unknown study."]})
        took_part = {s["participant_id"]: s for s in self.fake.submissions.values() if s["study_id"] == sid}
        lines, wrong = [], []
        for row in csv.reader(io.StringIO(body.get("csv_bonuses") or "")):
            if not row:
                continue
            who, amount = row[0].strip(), Decimal(row[1].strip())
            (lines if who in took_part else wrong).append((who, int(amount * 100)))
        if wrong or not lines:
            return _validation({"csv_bonuses": [f"Not in this study: {', '.join(w for w, _ in wrong)}" if wrong
                                                else "No bonus given."]})
        amount = sum(cents for _, cents in lines)
        bulk = {"id": self.fake.new_id("bon"), "study": sid, "amount": amount, "fees": int(amount * FEE),
                "total_amount": amount + int(amount * FEE), "lines": lines}
        self.fake.bulk_bonuses[bulk["id"]] = bulk
        return 201, {k: v for k, v in bulk.items() if k != "lines"}

    def bonus_pay(self, bulk_id: str) -> tuple[int, None | dict]:
        bulk = self.fake.bulk_bonuses.get(bulk_id)
        if bulk is None:
            return self.missing()
        for who, cents in bulk["lines"]:  # not idempotent: paying again pays again
            self.fake.ledger.append({"participant_id": who, "amount": cents, "bulk": bulk_id})
            for submission in self.fake.submissions.values():
                if submission["study_id"] == bulk["study"] and submission["participant_id"] == who:
                    submission["bonus_payments"].append(cents)
        return 202, None


def handler_for(fake: FakeProlific):
    routes = _Routes(fake)

    class Handler(JsonHandler):

        def _handle(self, method: str) -> None:
            url = urlparse(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return self.send_json(400, {"error": {"detail": "JSON parse error."}})
            with fake.lock:
                fake.requests.append({"method": method, "path": url.path, "query": url.query, "body": body,
                                      "authorization": self.headers.get("Authorization", "")})
                if fake.failures:
                    status, headers, payload = fake.failures.pop(0)
                    return self.send_json(status, payload, headers)
                if self.headers.get("Authorization") != f"Token {fake.token}":
                    return self.send_json(401, {"error": {"status": 401, "title": "Unauthorized.",
                                                      "detail": "Invalid token."}})
                if not url.path.startswith(PREFIX):
                    return self.send_json(*_Routes.missing())
                status, payload = routes.route(method, url.path, parse_qs(url.query), body)
            self.send_json(status, payload)

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

        def do_PATCH(self):
            self._handle("PATCH")

    return Handler


@contextmanager
def running(fake: FakeProlific | None = None) -> Iterator[FakeProlific]:
    """The fake server in a thread; ``fake.base_url`` + "/api/v1/" is the API root to configure."""
    fake = fake or FakeProlific()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(fake))
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
