"""Factories for test data. Three personas everywhere: annotator, researcher, outsider."""

from __future__ import annotations

import io

import factory
from PIL import Image

from annotate.importkit.images import image_store
from annotate.models import Batch, ModelConfig, Task, TaskImage, User
from annotate.queue.services import work_items_create_for_batch


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    role = User.Role.ANNOTATOR
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests")


class ModelConfigFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelConfig

    name = factory.Sequence(lambda n: f"sim-{n}")
    backend = ModelConfig.Backend.SIMULATED
    backend_settings = factory.LazyFunction(lambda: {"chunk_delay": 0})


class BatchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Batch

    name = factory.Sequence(lambda n: f"batch-{n}")


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    batch = factory.SubFactory(BatchFactory)
    external_id = factory.Sequence(lambda n: f"task-{n}")
    category = "Visual Logic"
    question = "How many apples are on the table?"
    answer_type = Task.AnswerType.NUMBER
    ground_truth = "7391"
    options = factory.LazyFunction(list)


def png_bytes(color: str = "red", size=(32, 24)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def attach_image(task: Task, color: str = "red") -> None:
    TaskImage.objects.create(task=task, blob=image_store(data=png_bytes(color)), position=task.task_images.count())


def make_batch(*, models: list[ModelConfig], tasks: int = 1, overlap: int = 1, members=(), **task_fields) -> Batch:
    """A ready InterFeedback batch with its work items."""
    batch = BatchFactory(overlap=overlap)
    for _ in range(tasks):
        TaskFactory(batch=batch, **task_fields)
    batch.task_count = tasks
    batch.save()
    batch.models_to_evaluate.set(models)
    batch.members.set(members)
    work_items_create_for_batch(batch=batch)
    return batch
