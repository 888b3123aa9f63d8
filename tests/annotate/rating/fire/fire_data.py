"""FIRE test data generated in the test: records in the released schema, written as JSON, JSONL or a zip."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.factories import png_bytes


def turn(role: str, value: str) -> dict:
    return {"role": role, "type": "response" if role == "student" else "feedback", "value": value}


def record(image: str, question: str, answer: str, n_rounds: int, *, source: str, split: str, **extra) -> dict:
    """A conversation of n_rounds (student response, teacher feedback) pairs, FIRE style."""
    conversations, scores = [], []
    for k in range(n_rounds):
        conversations.append(turn("student", f"Thought: attempt {k + 1}.\nAnswer: {answer if k else 'x'}\n\n"))
        score = 10 if k == n_rounds - 1 else 3 + k
        scores.append(score)
        conversations.append(turn("teacher", f"Score: {score}.\nFeedback: hint number {k + 1}."))
    return {
        "image": image, "img_path": image,
        "question": {"role": "user", "value": question},
        "groundtruth": {"role": "user", "value": answer},
        "conversations": conversations, "source": source, "round": n_rounds, "score": scores, "split": split,
        **extra,
    }


def sample_records() -> list[dict]:
    """Two conversations: 4 turns (3 rateable) in fire_test / chartqa, 6 turns (5 rateable) in fire_train."""
    return [
        record("bars_01.png", "Which bar is the tallest?", "green", 2, source="chartqa", split="fire_test"),
        record("shapes_02.png", "How many circles are there?", "3", 3, source="seedbench", split="fire_train"),
    ]


IMAGES = {"bars_01.png": "green", "shapes_02.png": "blue"}


def write_json(path: Path, records: list) -> Path:
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_images_dir(directory: Path, images: dict[str, str] = IMAGES) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, color in images.items():
        (directory / name).write_bytes(png_bytes(color))
    return directory


def write_images_zip(path: Path, images: dict[str, str] = IMAGES, *, records: list | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, color in images.items():
            archive.writestr(name, png_bytes(color))
        if records is not None:
            archive.writestr("fire.json", json.dumps(records))
    return path


def write_sample(tmp_path: Path, records: list | None = None) -> tuple[Path, Path]:
    """(records file, images directory) for the sample (or the given records)."""
    return write_json(tmp_path / "fire.json", sample_records() if records is None else records), \
        write_images_dir(tmp_path / "images")
