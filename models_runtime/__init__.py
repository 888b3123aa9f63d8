"""Model backends behind one streaming interface. Plain Python: never import Django here."""

from models_runtime.base import (
    Backend,
    GenerationSettings,
    ImagePart,
    Message,
    ModelError,
    ModelRequest,
    ModelResult,
    PermanentModelError,
    Stream,
    TaskContext,
    TransientModelError,
)

__all__ = [
    "Backend",
    "GenerationSettings",
    "ImagePart",
    "Message",
    "ModelError",
    "ModelRequest",
    "ModelResult",
    "PermanentModelError",
    "Stream",
    "TaskContext",
    "TransientModelError",
]
