"""The raw preference exports as a Hugging Face dataset: Parquet files with the images inside, a seeded train/test
split by item, a dataset card, and a zip that holds them beside the JSON lines and the images they name.

Parquet: each image is stored as the ``datasets`` Image feature stores it (a struct of ``bytes`` and ``path``) and
the file's schema metadata carries the features (the ``huggingface`` key ``datasets`` writes and reads), so
``load_dataset("parquet", data_files=...)`` yields PIL images with no code. The card is a README.md with YAML
front matter (configs naming each split's file, features, split sizes) and says how the pairs were made, how
well the raters agreed and which version of Feedback Lab made the files; the license is left to the researcher.
"""

from __future__ import annotations

import io
import json
import random
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from annotate.errors import ApplicationError
from annotate.models import Batch, ImageBlob
from annotate.rating.preference.services import DIMENSIONS
from annotate.server.version import VERSION
from evaluation.preference import records
from evaluation.preference.metrics import name_key
from evaluation.preference.reports import preference_report
from evaluation.preference.selectors import RatedItem, batch_has_images, rated_items

# A column's type: "string", "int64", "image", [type] (a list of it) or {field: type} (a struct).
ColumnType = str | list[Any] | dict[str, Any]
MESSAGES: ColumnType = [{"role": "string", "content": [{"type": "string", "text": "string"}]}]
SCORES: ColumnType = dict.fromkeys(DIMENSIONS, "int64")
PAIR_COLUMNS: dict[str, ColumnType] = {
    "prompt": MESSAGES, "chosen": MESSAGES, "rejected": MESSAGES, "images": ["image"],
    "item": "string", "rater": "string", "ranking": "string",
    "chosen_candidate": "int64", "rejected_candidate": "int64", "chosen_model": "string", "rejected_model": "string",
    "chosen_scores": SCORES, "rejected_scores": SCORES, "chosen_reason": "string", "rejected_reason": "string",
    "votes_chosen": "int64", "votes_rejected": "int64", "votes_tied": "int64",
}
RESPONSE_COLUMNS: dict[str, ColumnType] = {
    "item": "string", "question": "string", "image": "image", "image_name": "string", "source": "string",
    "split": "string", "candidate": "int64", "model": "string", "response": "string",
    "ratings": [{"rater": "string", **dict.fromkeys(DIMENSIONS, "int64"), "reason": "string", "place": "int64",
                 "ranking": "string"}],
}
ROWS_PER_GROUP = 500  # rows converted (and images held) at a time


# --- the split ----------------------------------------------------------------------------------------------------

def split_items(items: list[str], test_fraction: float, seed: int) -> records.Split:
    """Items (not records) to "train" or "test", so no item's pairs are in both: the items in name order, shuffled
    with ``seed``, the first round(n * test_fraction) of them (at least one, never all) in the test split."""
    if not 0 < test_fraction < 1:
        raise ApplicationError(f"test_fraction {test_fraction} is not between 0 and 1.", code="bad_split")
    if len(items) < 2:
        raise ApplicationError(f"A train/test split needs two rated items or more; the batch has {len(items)}.",
                               code="bad_split")
    order = sorted(set(items), key=name_key)
    random.Random(seed).shuffle(order)
    tests = min(len(order) - 1, max(1, round(len(order) * test_fraction)))
    return {item: "test" if k < tests else "train" for k, item in enumerate(order)}


@dataclass(frozen=True)
class SplitAsked:
    test_fraction: float
    seed: int


def batch_split(batch: Batch, asked: SplitAsked | None) -> records.Split | None:
    if asked is None:
        return None
    return split_items([item.item for item in rated_items(batch)], asked.test_fraction, asked.seed)


# --- Parquet with the images inside ---------------------------------------------------------------------------

def _arrow(kind: ColumnType) -> pa.DataType:
    if kind == "image":
        return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    if isinstance(kind, list):
        return pa.list_(_arrow(kind[0]))
    if isinstance(kind, dict):
        return pa.struct([(name, _arrow(inner)) for name, inner in kind.items()])
    return {"string": pa.string(), "int64": pa.int64()}[kind]


def _feature(kind: ColumnType) -> dict[str, Any]:
    """The type as ``datasets.Features.to_dict()`` writes it."""
    if kind == "image":
        return {"_type": "Image"}
    if isinstance(kind, list):
        return {"feature": _feature(kind[0]), "_type": "List"}
    if isinstance(kind, dict):
        return {name: _feature(inner) for name, inner in kind.items()}
    return {"dtype": kind, "_type": "Value"}


def columns_of(name: str, *, images: bool, split: bool) -> dict[str, ColumnType]:
    columns = dict(PAIR_COLUMNS if name == "preference-dpo" else RESPONSE_COLUMNS)
    if not images:
        columns.pop("images", None)
    return {**columns, records.SPLIT_COLUMN: "string"} if split else columns


def _schema(columns: dict[str, ColumnType]) -> pa.Schema:
    features = {"info": {"features": {name: _feature(kind) for name, kind in columns.items()}}}
    return pa.schema([(name, _arrow(kind)) for name, kind in columns.items()],
                     metadata={"huggingface": json.dumps(features)})


class _Images:
    """An item's image bytes, read once for all the records of the item (they come one item after another)."""

    def __init__(self) -> None:
        self._blob: int | None = None
        self._bytes = b""

    def of(self, item: RatedItem) -> bytes:
        if item.image_blob is None:
            raise ValueError(f"Item {item.item!r} shows no image.")
        if item.image_blob != self._blob:
            blob = ImageBlob.objects.only("file").get(pk=item.image_blob)
            with blob.file.open("rb") as handle:
                self._blob, self._bytes = item.image_blob, handle.read()
        return self._bytes


def _embedded(item: RatedItem, record: dict[str, Any], images: _Images) -> dict[str, Any]:
    if "images" in record:
        return {**record, "images": [{"bytes": images.of(item), "path": path} for path in record["images"]]}
    if "image" in record:
        return {**record, "image": {"bytes": images.of(item), "path": record["image"]} if record["image"] else None}
    return record


Stream = Iterator[tuple[RatedItem, dict[str, Any]]]


@dataclass(frozen=True)
class ParquetFile:
    content: bytes
    rows: int
    arrow_bytes: int  # the records' size in memory, as ``datasets`` counts a split's num_bytes


def parquet_file(stream: Stream, columns: dict[str, ColumnType]) -> ParquetFile:
    """The records with their images inside, ROWS_PER_GROUP rows at a time."""
    schema, images, out = _schema(columns), _Images(), io.BytesIO()
    rows = size = 0
    with pq.ParquetWriter(out, schema) as writer:
        group: list[dict[str, Any]] = []
        for item, record in stream:
            group.append(_embedded(item, record, images))
            if len(group) == ROWS_PER_GROUP:
                table = pa.Table.from_pylist(group, schema=schema)
                writer.write_table(table)
                rows, size, group = rows + len(group), size + table.nbytes, []
        if group or not rows:
            table = pa.Table.from_pylist(group, schema=schema)
            writer.write_table(table)
            rows, size = rows + len(group), size + table.nbytes
    return ParquetFile(out.getvalue(), rows, size)


STREAMS: dict[str, Callable[[Batch, records.Split | None], Stream]] = {
    "preference-dpo": records.dpo_stream, "preference-responses": records.response_stream,
}


def export_parquet(batch: Batch, name: str, split: records.Split | None) -> bytes:
    columns = columns_of(name, images=name != "preference-dpo" or batch_has_images(batch), split=split is not None)
    return parquet_file(STREAMS[name](batch, split), columns).content


# --- the dataset card -----------------------------------------------------------------------------------------

@dataclass
class Config:
    """One dataset of the card (``load_dataset(folder, name)``): its files per split and their sizes."""

    name: str  # the config's name
    export: str  # preference-dpo or preference-responses
    columns: dict[str, ColumnType]
    files: dict[str, str]  # split -> path beside the card
    rows: dict[str, int]  # split -> records
    arrow_bytes: dict[str, int]  # split -> size in memory
    size: int  # bytes of its files


def _yaml_feature(name: str | None, kind: ColumnType, indent: str) -> list[str]:
    """One feature as ``datasets`` writes it in a card (``Features._to_yaml_list``)."""
    head = f"{indent}- name: {name}" if name is not None else None
    inner = indent + "  "
    if kind == "image":
        return [head or "", f"{inner}dtype: image"]
    if isinstance(kind, list):
        element = kind[0]
        if element == "image" or isinstance(element, str):
            return [head or "", f"{inner}list: {element}"]
        return [head or "", f"{inner}list:", *(line for field, sub in element.items()
                                               for line in _yaml_feature(field, sub, inner))]
    if isinstance(kind, dict):
        return [head or "", f"{inner}struct:", *(line for field, sub in kind.items()
                                                 for line in _yaml_feature(field, sub, inner))]
    return [head or "", f"{inner}dtype: {kind}"]


def _size_category(rows: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                         (1_000_000, "100K<n<1M")):
        if rows < limit:
            return label
    return "1M<n<10M"


def _agreement(batch: Batch) -> list[str]:
    """The report's agreement on the pairs: observed, Krippendorff's alpha (ordinal), mean pairwise kappa."""
    report = preference_report(batch, n_resamples=200)
    rows = report.agreement.rows
    if not rows or not rows[0][1]:
        return ["No comparison was judged by two or more raters, so there is no agreement to report."]
    _, items, compared, agreement, alpha, kappa = rows[0]
    shown = ", ".join(f"{r[0]} and {r[1]} {cell(r[4])}" for r in report.kappa.rows)

    return [f"On the {items} items judged by two or more raters ({compared} pairs of raters' judgments of one "
            f"comparison): observed agreement {cell(agreement)}%, Krippendorff's alpha (ordinal) {cell(alpha)}, "
            f"mean pairwise Cohen's kappa (quadratic weights) {cell(kappa)}. Per rater pair: {shown or 'none'}.",
            "", "The study's report (its agreement and kappa tables) says how these are counted."]


def cell(value: object) -> str:
    return "undefined" if value is None else str(value)


def dataset_card(batch: Batch, configs: list[Config], split: SplitAsked | None) -> bytes:
    images = any("images" in c.columns or "image" in c.columns for c in configs)
    total = sum(sum(c.rows.values()) for c in configs)
    front = ["---", f"pretty_name: {json.dumps(batch.name + ' preference judgments')}",
             "license: other  # fill in the license you release these data under (e.g. cc-by-4.0)",
             "language:", "- en  # fill in the language(s) of the questions and responses",
             "task_categories:", f"- {'image-text-to-text' if images else 'text-generation'}",
             "tags:", "- preference", "- dpo", "- reward-modeling", "- human-feedback", "- feedback-lab",
             "size_categories:", f"- {_size_category(total)}", "configs:"]
    for k, config in enumerate(configs):
        front += [f"- config_name: {config.name}", *(["  default: true"] if k == 0 else []), "  data_files:"]
        front += [line for name, path in config.files.items() for line in (f"  - split: {name}", f"    path: {path}")]
    front.append("dataset_info:")
    for config in configs:
        front += [f"- config_name: {config.name}", "  features:"]
        for name, kind in config.columns.items():
            front += _yaml_feature(name, kind, "  ")
        front.append("  splits:")
        front += [line for name, rows in config.rows.items()
                  for line in (f"  - name: {name}", f"    num_bytes: {config.arrow_bytes[name]}",
                               f"    num_examples: {rows}")]
        front += [f"  download_size: {config.size}", f"  dataset_size: {sum(config.arrow_bytes.values())}"]
    front.append("---")
    body = [f"# {batch.name}: human preference judgments", "",
            f"Made by Feedback Lab {VERSION} from the preference study **{batch.name}** (batch {batch.id}). "
            "Cite this version with the data.", "",
            "## Files", "", "| config | split | file | records |", "|---|---|---|---|"]
    body += [f"| {c.name} | {name} | {c.files[name]} | {c.rows[name]} |" for c in configs for name in c.files]
    body += ["", "```python", "from datasets import load_dataset", "",
             f'data = load_dataset("parquet", data_files="{configs[0].files[next(iter(configs[0].files))]}", '
             'split="train")  # images arrive as PIL images', "```", "",
             "Or load the folder holding this card: `load_dataset(FOLDER)` (the configs and splits above).", "",
             "## How the pairs were made", "",
             "Raters saw a question (with its image, when it has one) and two or more responses by different "
             "models, without the models' names; each scored every response (helpfulness, faithfulness, ethics, "
             "1-5, with a reason) and ranked them, ties allowed. Only final judgments are exported (drafts are not).",
             "",
             "- `preference-dpo`: one record per rater and **strict** preference between two responses of an item "
             "(`chosen` the one the rater ranked higher): every pair traces back to its rater. Ties prefer nothing "
             "and are left out (they are in `preference-responses`). `votes_chosen`, `votes_rejected` and "
             "`votes_tied` count the item's raters who preferred the chosen response, the rejected one, or "
             "neither: `votes_chosen > votes_rejected` keeps the majority's pairs.",
             "- `preference-responses`: one record per response, with every rater's scores, reason and place.",
             "- `prompt`, `chosen`, `rejected` and `images` follow TRL's conversational preference format "
             "(vision content parts); `images` is absent when the study shows no image.", "",
             "## Splits", ""]
    if split is None:
        body.append("One split, `train`, with every item. Ask the export for a split by item (`test_fraction`, "
                    "`split_seed`) to get a test split.")
    else:
        body.append(f"By item, so no item's records are in both: the items in name order, shuffled with seed "
                    f"{split.seed}, the first {split.test_fraction:g} of them in `test` (at least one). Each record "
                    f"names its split in `{records.SPLIT_COLUMN}` (`split` is the source record's own field).")
    body += ["", "## Rater agreement", "", *_agreement(batch), "", "## License", "",
             "Not set by Feedback Lab: fill in `license` above and here before you share these data.", ""]
    return ("\n".join([*front, *body]) + "\n").encode()


# --- the zip: a data file with its images and its card ----------------------------------------------------------

STEMS = {"preference-dpo": "preference_dpo", "preference-responses": "preference_responses"}


def parquet_files(batch: Batch, name: str, split: records.Split | None) -> tuple[Config, dict[str, bytes]]:
    """The export's Parquet files, one per split (all of it as ``train`` without a split), and their config."""
    columns = columns_of(name, images=name != "preference-dpo" or batch_has_images(batch), split=split is not None)
    names = ["train"] if split is None else ["train", "test"]
    files: dict[str, ParquetFile] = {}
    paths: dict[str, str] = {}
    for part in names:
        stream = ((item, record) for item, record in STREAMS[name](batch, split)
                  if split is None or record[records.SPLIT_COLUMN] == part)
        path = f"{STEMS[name]}{'' if split is None else '-' + part}.parquet"
        files[path] = parquet_file(stream, columns)
        paths[part] = path
    config = Config(name="pairs" if name == "preference-dpo" else "responses", export=name, columns=columns,
                    files=paths, rows={part: files[path].rows for part, path in paths.items()},
                    arrow_bytes={part: files[path].arrow_bytes for part, path in paths.items()},
                    size=sum(len(f.content) for f in files.values()))
    return config, {path: f.content for path, f in files.items()}


def export_zip(batch: Batch, name: str, asked: SplitAsked | None) -> bytes:
    """The export as a folder in a zip: the JSON lines, the images they name (``images/``), the same records as
    Parquet with the images inside (one file per split) and the dataset card (README.md)."""
    split = batch_split(batch, asked)
    config, parquet = parquet_files(batch, name, split)
    jsonl = records.dpo_jsonl(batch, split) if name == "preference-dpo" else records.responses_jsonl(batch, split)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.comment = f"Feedback Lab {VERSION}".encode()
        archive.writestr("README.md", dataset_card(batch, [config], asked))
        archive.writestr(f"{STEMS[name]}.jsonl", b"".join(jsonl))
        for path, content in parquet.items():
            archive.writestr(path, content, compress_type=zipfile.ZIP_STORED)  # Parquet compresses its own
        for path, content in item_images(batch):
            archive.writestr(path, content, compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def item_images(batch: Batch) -> Iterator[tuple[str, bytes]]:
    """(``images/<sha256>.<ext>``, bytes) of every rated item's image, once each."""
    blobs = {item.image_blob: item.image for item in rated_items(batch) if item.image_blob is not None}
    for blob in ImageBlob.objects.filter(pk__in=list(blobs)).order_by("sha256"):
        with blob.file.open("rb") as handle:
            yield str(blobs[blob.pk]), handle.read()
