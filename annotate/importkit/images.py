"""Task images: validated with Pillow, re-encoded to PNG, stored once by content hash."""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, default_storage
from PIL import Image, UnidentifiedImageError

from annotate.models import ImageBlob

MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 40_000_000


class BadImage(ValueError):
    """An image that cannot be used; the message says why."""


def image_normalize(data: bytes) -> tuple[bytes, int, int]:
    """Check an uploaded image and re-encode it as PNG. Raises BadImage naming the problem."""
    if not data:
        raise BadImage("the image file is empty (0 bytes)")
    if len(data) > MAX_IMAGE_BYTES:
        raise BadImage(f"the image is {len(data)} bytes; at most {MAX_IMAGE_BYTES} are allowed")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:
                width, height = probe.size
                if width * height > MAX_IMAGE_PIXELS:
                    raise BadImage(f"the image is {width}x{height} pixels; at most {MAX_IMAGE_PIXELS} pixels are allowed")
                probe.verify()
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                if image.mode not in ("RGB", "RGBA", "L", "LA"):
                    image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
                out = io.BytesIO()
                image.save(out, format="PNG", optimize=False)
    except BadImage:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise BadImage("the image is a decompression bomb (too many pixels for its size)") from None
    except UnidentifiedImageError:
        raise BadImage("the file is not an image Pillow can read") from None
    except (OSError, SyntaxError, ValueError) as error:
        raise BadImage(f"the image is corrupt or truncated ({error})") from None
    return out.getvalue(), width, height


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """A validated image, re-encoded, with the content hash it will be stored under."""

    sha256: str
    png: bytes
    width: int
    height: int


def image_prepare(data: bytes) -> PreparedImage:
    png, width, height = image_normalize(data)
    return PreparedImage(hashlib.sha256(png).hexdigest(), png, width, height)


def _blob_name(digest: str) -> str:
    return f"{ImageBlob._meta.get_field('file').upload_to}{digest[:2]}/{digest}.png"


def _blob_file_write(digest: str, png: bytes) -> str:
    """Write the file under its content-addressed name (kept if there already)."""
    name = _blob_name(digest)
    if isinstance(default_storage, FileSystemStorage):
        # Straight to disk: the storage API's per-file checks cost ~1 ms each, a lot for thousands of images.
        path = Path(default_storage.path(name))
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.part")
            partial.write_bytes(png)
            os.replace(partial, path)  # readers never see half a file
        return name
    if not default_storage.exists(name):
        name = default_storage.save(name, ContentFile(png))
    return name


def image_store(*, data: bytes) -> ImageBlob:
    """Store a validated image once; the same content always maps to the same blob."""
    image = image_prepare(data)
    blob = ImageBlob.objects.filter(sha256=image.sha256).first()
    if blob is not None:
        return blob
    return ImageBlob.objects.get(pk=images_store_bulk([image])[image.sha256])


def images_store_bulk(images: Iterable[PreparedImage], *, chunk: int = 2000) -> dict[str, int]:
    """Store many prepared images with a few queries; returns sha256 -> blob id for all of them.

    Files are content-addressed, so one left behind by a rolled-back import is simply reused next time.
    """
    by_digest = {image.sha256: image for image in images}
    digests = list(by_digest)
    ids: dict[str, int] = {}
    for start in range(0, len(digests), chunk):
        ids.update(ImageBlob.objects.filter(sha256__in=digests[start:start + chunk]).values_list("sha256", "id"))
    missing = [image for digest, image in by_digest.items() if digest not in ids]
    # Creating thousands of small files is latency-bound: a few threads overlap it.
    with ThreadPoolExecutor(max_workers=8) as pool:
        names = list(pool.map(lambda image: _blob_file_write(image.sha256, image.png), missing))
    new = [ImageBlob(sha256=image.sha256, file=name, width=image.width, height=image.height, mime="image/png",
                     size=len(image.png)) for image, name in zip(missing, names, strict=True)]
    # ignore_conflicts: a concurrent import may store the same content first; either row is the right one.
    ImageBlob.objects.bulk_create(new, batch_size=chunk, ignore_conflicts=True)
    fresh = [blob.sha256 for blob in new]
    for start in range(0, len(fresh), chunk):
        ids.update(ImageBlob.objects.filter(sha256__in=fresh[start:start + chunk]).values_list("sha256", "id"))
    return ids
