"""The data model: batches of tasks, model configs, InterFeedback sessions and rounds, FIRE conversations,
the work queue and long-running jobs. Fields, constraints and trivial properties only: writes live in services.
Everything is importable from ``annotate.models``."""

from annotate.models.bench import BenchAnswer, BenchLane, BenchRun, FireRunTurn
from annotate.models.conversations import Conversation, Ranking, Rating, Turn
from annotate.models.core import (
    Assignment,
    Batch,
    ImageBlob,
    Job,
    ModelConfig,
    Task,
    TaskImage,
    User,
    WorkItem,
    _new_pseudonym,  # noqa: F401  (migration 0001 names it as annotate.models._new_pseudonym)
)
from annotate.models.crowd import (
    ConsentText,
    CrowdStudy,
    InviteLink,
    ParticipantDecision,
    Participation,
    ScreeningAnswer,
    SurveyResponse,
)
from annotate.models.prolific import ProlificAction, ProlificCall, ProlificStudy, ProlificSubmission
from annotate.models.sessions import LeakWarning, Round, RoundFailure, Session, VerdictOverride

__all__ = [
    "Assignment", "Batch", "BenchAnswer", "BenchLane", "BenchRun", "FireRunTurn", "ConsentText", "Conversation",
    "CrowdStudy", "ImageBlob", "InviteLink", "Job", "LeakWarning", "ModelConfig", "ParticipantDecision",
    "Participation", "ProlificAction", "ProlificCall", "ProlificStudy", "ProlificSubmission", "Ranking", "Rating",
    "Round", "RoundFailure", "ScreeningAnswer", "Session", "SurveyResponse",
    "Task", "TaskImage", "Turn", "User", "VerdictOverride", "WorkItem",
]
