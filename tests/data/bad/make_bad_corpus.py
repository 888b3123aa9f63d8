"""Regenerate the corpus of bad import files in this directory: ``python tests/data/bad/make_bad_corpus.py``.

Each file breaks one rule of the importers. What each must produce is listed in
``tests/annotate/importers/test_bad_corpus.py``. Files are tiny (the huge line and the bombs live compressed
inside zips or in forged headers), the whole corpus stays far below 1 MB.
"""

from __future__ import annotations

import io
import json
import stat
import struct
import zipfile
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

HERE = Path(__file__).resolve().parent


def png(color="red", size=(8, 6)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def forged_png(width: int, height: int) -> bytes:
    """A valid 1x1 PNG whose header claims ``width`` x ``height`` (a decompression bomb's calling card)."""
    data = bytearray(png(size=(1, 1)))
    ihdr = bytearray(data[12:29])  # type (4) + data (13)
    ihdr[4:12] = struct.pack(">II", width, height)
    data[12:29] = ihdr
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(ihdr)) & 0xFFFFFFFF)
    return bytes(data)


def task(task_id="t-1", **fields) -> dict:
    record = {"id": task_id, "category": "Visual Logic", "question": "Which option?", "options": ["a", "b", "c", "d"],
              "answer_type": "choice", "answer": "B", "images": [], "source": "bad-corpus"}
    record.update(fields)
    return record


def jsonl(*records) -> bytes:
    return ("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n").encode("utf-8")


def zipped(entries: dict[str, bytes], *, infos: list[tuple[zipfile.ZipInfo, bytes]] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for info, data in infos:
            archive.writestr(info, data)
    return out.getvalue()


def with_image(name: str, data: bytes, **fields) -> bytes:
    return zipped({"tasks.jsonl": jsonl(task(images=[f"images/{name}"], **fields)), f"images/{name}": data})


def declared_huge_zip() -> bytes:
    """Two small entries whose central directory claims ~3.75 GiB each."""
    data = bytearray(zipped({"tasks.jsonl": jsonl(task()), "images/a.png": png()}))
    start = 0
    while (start := data.find(b"PK\x01\x02", start)) != -1:
        data[start + 24:start + 28] = struct.pack("<I", 0xF0000000)
        start += 4
    return bytes(data)


def symlink_zip() -> bytes:
    info = zipfile.ZipInfo("images/link.png")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return zipped({"tasks.jsonl": jsonl(task())}, infos=[(info, b"/etc/passwd")])


def parquet_rows() -> bytes:
    table = pa.table({"qid": ["p-1", "p-2"], "question": ["Which?", "Which?"],
                      "options": [["x", "y"], ["x", "y"]], "answer": ["A", "Q"], "subject": ["Art", "Art"]})
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


CORPUS: dict[str, bytes] = {
    "truncated_json.jsonl": jsonl(task("t-1"))
    + b'{"id": "t-2", "category": "Visual Logic", "question": "Which opt',
    "wrong_types.jsonl": jsonl(task(question=42, options="a, b, c")),
    "not_an_object.jsonl": jsonl(task("t-1")) + b'["t-2", "a list, not an object"]\n',
    "missing_required.jsonl": jsonl({"id": "t-1", "category": "Visual Logic", "answer_type": "text"}),
    "empty.jsonl": b"",
    "blank_lines_only.jsonl": b"\n\n   \n",
    "duplicate_ids.jsonl": jsonl(task("a-1"), task("a-2"), task("a-1")),
    "unknown_answer_type.jsonl": jsonl(task(answer_type="essay")),
    "choice_not_in_options.jsonl": jsonl(task(answer="E")),
    "choice_without_options.jsonl": jsonl(task(options=[], answer="A")),
    "number_not_a_number.jsonl": jsonl(task(answer_type="number", options=[], answer="three")),
    "option_not_a_string.jsonl": jsonl(task(options=["a", 2, "c"])),
    "recorded_answers_shape.jsonl": jsonl(task(recorded_answers={"gpt-4o": "Answer: B"})),
    "recorded_answers_too_many.jsonl": jsonl(task(recorded_answers={"gpt-4o": ["A", "B", "C", "D", "B"]})),
    "latin1.jsonl": jsonl(task("t-1")) + json.dumps(task("t-2", question="Où est le café ?"),
                                                    ensure_ascii=False).encode("latin-1") + b"\n",
    "utf16_bom.jsonl": b"\xff\xfe" + json.dumps(task()).encode("utf-16-le"),
    "nul_bytes.jsonl": jsonl(task()) + b"\x00\x01\x02binary\n",
    "remote_image.jsonl": jsonl(task(images=["https://example.org/cat.png"])),
    "path_escape_image.jsonl": jsonl(task(images=["../../etc/passwd"])),
    "absolute_image_path.jsonl": jsonl(task(images=["/etc/passwd"])),
    "huge_line.zip": zipped({"tasks.jsonl": jsonl(task("t-1"), task("t-2", question="x" * 1_500_000))}),
    "missing_image.zip": zipped({"tasks.jsonl": jsonl(task(images=["images/missing.png"]))}),
    "zero_byte_image.zip": with_image("zero.png", b""),
    "not_an_image.zip": with_image("notes.png", b"These are meeting notes, not a picture.\n" * 3),
    "corrupt_png.zip": with_image("cut.png", png(size=(64, 64), color="blue")[:60]),
    "bomb_png.zip": with_image("bomb.png", forged_png(100_000, 100_000)),
    "too_many_pixels_png.zip": with_image("wide.png", forged_png(8_000, 6_000)),
    "zip_slip.zip": zipped({"tasks.jsonl": jsonl(task()), "../evil.png": png()}),
    "zip_absolute_path.zip": zipped({"tasks.jsonl": jsonl(task()), "/tmp/evil.png": png()}),
    "zip_symlink.zip": symlink_zip(),
    "zip_declared_huge.zip": declared_huge_zip(),
    "zip_without_tasks.zip": zipped({"readme.txt": b"no tasks here", "images/a.png": png()}),
    "truncated.zip": zipped({"tasks.jsonl": jsonl(task()), "images/a.png": png()})[:-40],
    "rows_missing_column.csv": b"qid,prompt,answer\nr-1,Which?,A\n",
    "rows_short_row.csv": b"qid,question,answer,subject\nr-1,How many?,3,Math\nr-2,How many?\n",
    "rows_latin1.csv": b"qid,question,answer,subject\nr-1,How many?,3,Math\n" + "r-2,Combien de caf\u00e9s ?,4,Math\n".encode("latin-1"),
    "rows_bad_options.csv": b'qid,question,options,answer,subject\nr-1,Which?,"[\'x\', \'y\'",A,Art\n',
    "rows_answer_not_option.parquet": parquet_rows(),
}


def main() -> None:
    for name, data in CORPUS.items():
        (HERE / name).write_bytes(data)
    total = sum(len(d) for d in CORPUS.values())
    print(f"wrote {len(CORPUS)} files, {total:,} bytes")


if __name__ == "__main__":
    main()
