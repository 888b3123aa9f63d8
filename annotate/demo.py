"""The demo: users, model configs and a small batch with generated images (make demo)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from PIL import Image, ImageDraw

from annotate.importkit.images import image_store
from annotate.models import Batch, ModelConfig, Task, TaskImage, User
from annotate.queue.services import work_items_create_for_batch

DEMO_BATCH = "Demo batch"
DEMO_USERS = [
    ("annotator", "annotate-demo", User.Role.ANNOTATOR),
    ("annotator2", "annotate-demo", User.Role.ANNOTATOR),
    ("researcher", "research-demo", User.Role.RESEARCHER),
    ("admin", "admin-demo", User.Role.ADMIN),
]


@dataclass(frozen=True)
class DemoTask:
    external_id: str
    category: str
    question: str
    options: list[str]
    answer_type: str
    ground_truth: str
    picture: str | None  # which generated picture, if any


DEMO_TASKS = [
    DemoTask("demo-count-001", "Mathematical Logic", "How many circles are in the image?", [], "number", "7", "circles"),
    DemoTask("demo-shape-002", "Visual Logic", "Which shape is drawn in red?",
             ["Circle", "Square", "Triangle", "Star"], "choice", "C", "shapes"),
    DemoTask("demo-bars-003", "Mathematical Logic", "What is the height of the tallest bar?", [], "number", "185", "bars"),
    DemoTask("demo-grid-004", "Visual Logic", "Which cell of the grid is filled?",
             ["Top left", "Top right", "Bottom left", "Bottom right"], "choice", "D", "grid"),
    DemoTask("demo-text-005", "Math(Text)", "A box holds 12 pencils. How many pencils are in 9 boxes?", [], "number",
             "108", None),
]


def _picture(kind: str) -> bytes:
    image = Image.new("RGB", (320, 220), "white")
    draw = ImageDraw.Draw(image)
    if kind == "circles":
        for i in range(7):
            x, y = 30 + (i % 4) * 70, 40 + (i // 4) * 90
            draw.ellipse([x, y, x + 50, y + 50], outline="navy", width=4)
    elif kind == "shapes":
        draw.ellipse([20, 70, 90, 140], fill="blue")
        draw.rectangle([110, 70, 180, 140], fill="green")
        draw.polygon([(230, 140), (265, 70), (300, 140)], fill="red")
    elif kind == "bars":
        for i, h in enumerate([90, 185, 140, 60]):
            draw.rectangle([30 + i * 70, 205 - h, 80 + i * 70, 205], fill="teal")
            draw.text((40 + i * 70, 190 - h), str(h), fill="black")
    elif kind == "grid":
        draw.rectangle([60, 10, 260, 210], outline="black", width=3)
        draw.line([160, 10, 160, 210], fill="black", width=3)
        draw.line([60, 110, 260, 110], fill="black", width=3)
        draw.rectangle([163, 113, 257, 207], fill="orange")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def demo_users_create() -> list[tuple[str, str, str]]:
    created = []
    for username, password, role in DEMO_USERS:
        user, new = User.objects.get_or_create(username=username, defaults={"role": role})
        user.role = role
        user.is_staff = user.is_superuser = role == User.Role.ADMIN
        # Hashed only for a new user (or one without a password): a second `make demo` skips ~1 s of PBKDF2.
        if new or not user.has_usable_password():
            user.set_password(password)
        user.save()
        created.append((username, password, role))
    return created


def demo_models_create(*, tiny_model_path: Path | None) -> list[ModelConfig]:
    configs = [
        ModelConfig.objects.update_or_create(
            name="demo-student",
            defaults={"display_name": "Demo student (simulated)", "backend": ModelConfig.Backend.SIMULATED,
                      "backend_settings": {"chunk_delay": 0.04}},
        )[0]
    ]
    if tiny_model_path is not None:
        configs.append(
            ModelConfig.objects.update_or_create(
                name="tiny-llava",
                defaults={"display_name": "Tiny LLaVA (random weights, real transformers path)",
                          "backend": ModelConfig.Backend.TRANSFORMERS,
                          "backend_settings": {"path": str(tiny_model_path)},
                          "generation": {"max_new_tokens": 24, "seed": 0}},
            )[0]
        )
    return configs


@transaction.atomic
def demo_batch_create(*, models: list[ModelConfig], researchers: list[User]) -> Batch:
    batch, created = Batch.objects.get_or_create(
        name=DEMO_BATCH,
        defaults={"description": "Generated pictures across three categories; choice and number answers."},
    )
    if created:
        for spec in DEMO_TASKS:
            task = Task.objects.create(
                batch=batch, external_id=spec.external_id, category=spec.category, question=spec.question,
                options=spec.options, answer_type=spec.answer_type, ground_truth=spec.ground_truth,
                source="Feedback Lab demo",
            )
            if spec.picture:
                TaskImage.objects.create(task=task, blob=image_store(data=_picture(spec.picture)), position=0)
        batch.task_count = len(DEMO_TASKS)
        batch.category_order = list(dict.fromkeys(spec.category for spec in DEMO_TASKS))  # as an import sets it
        batch.save(update_fields=["task_count", "category_order"])
    batch.models_to_evaluate.set(models)
    batch.members.set(researchers)
    work_items_create_for_batch(batch=batch)
    return batch
