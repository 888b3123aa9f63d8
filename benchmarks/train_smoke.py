"""Train on a preference study's export with TRL: RewardTrainer and DPOTrainer run a few steps on tiny models with
random weights, built here (nothing is downloaded), and print their losses.

    .venv/bin/python -m pip install -e ".[train]"
    .venv/bin/python benchmarks/train_smoke.py                   # makes two small studies and downloads their exports
    .venv/bin/python benchmarks/train_smoke.py --pairs study-preference-dpo.parquet   # a file you downloaded

Without --pairs it makes, in a scratch folder (its own SQLite database), a text-only study and a study with
images, each of 8 items of 3 responses ranked by 3 raters through the rating service, and downloads their pairs
as a researcher does from the preference report's page: the text study's zip with a train/test split by item
(``?test_fraction=0.25``), the image study's Parquet file. Then, with no code between the download and TRL but
``load_dataset``:

- text: ``RewardTrainer`` (a tiny Llama with a score head) and ``DPOTrainer`` (the tiny Llama) on the zip's train
  split, the folder loaded by its dataset card;
- vision: ``DPOTrainer`` with the project's tiny LLaVA (models_runtime.tiny) on the Parquet file, images inside.
  TRL's RewardTrainer takes text only (a tokenizer and a sequence classifier; TRL 1.16 has no vision reward
  path), so the vision path trains DPO alone.

With --pairs FILE (a downloaded ``preference-dpo`` .parquet or .jsonl, or an unzipped download's folder) it trains
on that file instead: the vision path when it has an ``images`` column, else the text path.

Prints each trainer's loss per step; exits 1 when a loss is not finite. HF_HUB_OFFLINE=1: any download fails.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

ITEMS = 8
RANKINGS = ["1>2>3", "2>1>3", "1=2>3", "3>1>2", "2>3>1", "1>3>2"]
COLOURS = ["red", "green", "blue", "yellow", "purple", "orange", "white", "black"]


# --- a small study, exported as a researcher downloads it -------------------------------------------------------

def _django(scratch: Path) -> None:
    os.environ["FEEDBACK_LAB_VAR_DIR"] = str(scratch / "var")
    os.environ.pop("DATABASE_URL", None)  # its own SQLite file in the scratch folder
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotate.config.settings")
    os.environ.setdefault("SECRET_KEY", "train-smoke-only-secret-key")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _study(scratch: Path, name: str, *, images: bool):
    from PIL import Image

    from annotate.imports.batches import batch_import
    from annotate.models import Batch, User
    from annotate.queue.services import assignment_next
    from annotate.rating.preference.services import preference_save

    folder = scratch / name
    (folder / "images").mkdir(parents=True)
    records = []
    for k in range(ITEMS):
        record = {"id": f"{name}-{k}", "question": f"What colour is shape {k}?",
                  "responses": [f"It is {COLOURS[k]}.", f"It is {COLOURS[k - 1]}.", "I cannot tell."],
                  "models": ["alpha", "beta", "gamma"]}
        if images:
            Image.new("RGB", (48, 40), COLOURS[k]).save(folder / "images" / f"shape_{k}.png")
            record["image"] = f"shape_{k}.png"
        records.append(record)
    path = folder / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = batch_import(path=path, name=name, kind="preference", settings={"overlap": 3},
                          options={"images": str(folder / "images")} if images else {})
    if report.status != "imported":
        raise SystemExit(report.render())
    batch = Batch.objects.get(name=name)
    for r in range(3):
        rater, _ = User.objects.get_or_create(username=f"{name}-rater-{r}", defaults={"pseudonym": f"{name}-r{r}"})
        while (assignment := assignment_next(annotator=rater, batch=batch)) is not None:
            k = int(assignment.work_item.conversation.external_id.rsplit("-", 1)[1])
            preference_save(annotator=rater, conversation_id=assignment.work_item.conversation_id,
                            ranking=RANKINGS[(k + r) % len(RANKINGS)], final=True, client_request_id=f"{r}-{k}",
                            ratings={i: {"helpfulness": 5 - i, "faithfulness": 4, "ethics": 5, "reason": "Fine."}
                                     for i in range(3)})
    return batch


def _download(batch, url_name: str, fmt: str, query: str = "") -> bytes:
    """The file the preference report's download link gives a researcher of the batch."""
    from django.test import Client
    from django.urls import reverse

    from annotate.models import User

    researcher, _ = User.objects.get_or_create(username="smoke-researcher", defaults={"role": User.Role.RESEARCHER})
    batch.members.add(researcher)
    client = Client()
    client.force_login(researcher)
    response = client.get(reverse(url_name, args=[batch.id, "preference-dpo", fmt]) + query)
    if response.status_code != 200:
        raise SystemExit(f"Download failed ({response.status_code}): {response.content[:300]!r}")
    return b"".join(response.streaming_content) if response.streaming else response.content


def make_exports(scratch: Path) -> tuple[Path, Path]:
    """(the text study's unzipped download, the image study's Parquet file)."""
    _django(scratch)
    text = _study(scratch, "smoke-text", images=False)
    vision = _study(scratch, "smoke-vision", images=True)
    folder = scratch / "downloads" / "smoke-text-preference-dpo"
    zipfile.ZipFile(io.BytesIO(_download(text, "research-export", "zip", "?test_fraction=0.25"))).extractall(folder)
    parquet = scratch / "downloads" / "smoke-vision-preference-dpo.parquet"
    parquet.write_bytes(_download(vision, "research-export", "parquet"))
    return folder, parquet


# --- training ---------------------------------------------------------------------------------------------------

def _args(config_class, output: Path, **extra):
    return config_class(output_dir=str(output), max_steps=3, per_device_train_batch_size=2, learning_rate=1e-3,
                        logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, seed=0,
                        dataloader_num_workers=0, disable_tqdm=True, **extra)


def _losses(trainer) -> list[float]:
    return [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]


def _report(what: str, losses: list[float]) -> bool:
    finite = bool(losses) and all(math.isfinite(loss) for loss in losses)
    print(f"{what}: losses per step {[round(loss, 4) for loss in losses]} ({'finite' if finite else 'NOT FINITE'})")
    return finite


def _load(path: Path):
    from datasets import load_dataset

    if path.is_dir():  # an unzipped download: its dataset card names the splits
        return load_dataset(str(path), split="train")
    return load_dataset("parquet" if path.suffix == ".parquet" else "json", data_files=str(path), split="train")


def train_text(pairs, models: Path, output: Path) -> bool:
    from trl import DPOConfig, DPOTrainer, RewardConfig, RewardTrainer

    from models_runtime.tiny import build_tiny_causal_lm

    model = build_tiny_causal_lm(models / "tiny-causal")
    reward = RewardTrainer(model=model, args=_args(RewardConfig, output / "reward"), train_dataset=pairs)
    reward.train()
    dpo = DPOTrainer(model=model, args=_args(DPOConfig, output / "dpo"), train_dataset=pairs)
    dpo.train()
    return _report("text RewardTrainer", _losses(reward)) & _report("text DPOTrainer", _losses(dpo))


def train_vision(pairs, models: Path, output: Path) -> bool:
    from trl import DPOConfig, DPOTrainer

    from models_runtime.tiny import build_tiny_llava

    model = build_tiny_llava(models / "tiny-llava")
    dpo = DPOTrainer(model=model, args=_args(DPOConfig, output / "dpo-vision", max_length=None),
                     train_dataset=pairs)
    dpo.train()
    print("vision RewardTrainer: not run (TRL's RewardTrainer takes text only: a tokenizer and a sequence "
          "classifier)")
    return _report("vision DPOTrainer", _losses(dpo))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, help="A downloaded preference-dpo file (.parquet, .jsonl) or an "
                                                   "unzipped download's folder (default: make two small studies)")
    parser.add_argument("--keep", type=Path, help="Work in this folder and keep it (default: a temporary one)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="train-smoke-") as temporary:
        scratch = options.keep or Path(temporary)
        scratch.mkdir(parents=True, exist_ok=True)
        if options.pairs:
            pairs = _load(options.pairs)
            vision = "images" in pairs.column_names
            text_pairs, vision_pairs = (None, pairs) if vision else (pairs, None)
        else:
            text_folder, parquet = make_exports(scratch)
            text_pairs, vision_pairs = _load(text_folder), _load(parquet)
            print(f"text study: {text_pairs.num_rows} training pairs (the zip's train split); "
                  f"vision study: {vision_pairs.num_rows} pairs with images")
        ok = True
        if text_pairs is not None:
            ok &= train_text(text_pairs, scratch / "models", scratch / "runs")
        if vision_pairs is not None:
            ok &= train_vision(vision_pairs, scratch / "models", scratch / "runs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
