"""Model backends behind one streaming interface. Plain Python: never import Django here."""

from models_runtime.base import (
    Backend,
    EmptyAnswerError,
    GenerationSettings,
    ImagePart,
    Message,
    ModelError,
    ModelRequest,
    ModelResult,
    PermanentModelError,
    Stream,
    StreamBrokenError,
    TaskContext,
    TransientModelError,
)
from models_runtime.retry import RetryPolicy

__all__ = [
    "Backend",
    "EmptyAnswerError",
    "GenerationSettings",
    "ImagePart",
    "Message",
    "ModelError",
    "ModelRequest",
    "ModelResult",
    "PermanentModelError",
    "RetryPolicy",
    "Stream",
    "StreamBrokenError",
    "TaskContext",
    "TransientModelError",
]
