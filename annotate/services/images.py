"""Task images: validated with Pillow, re-encoded to PNG, stored once by content hash."""

from __future__ import annotations

import hashlib
import io
import warnings

from django.core.files.base import ContentFile
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


def image_store(*, data: bytes) -> ImageBlob:
    """Store a validated image once; the same content always maps to the same blob."""
    png, width, height = image_normalize(data)
    digest = hashlib.sha256(png).hexdigest()
    blob = ImageBlob.objects.filter(sha256=digest).first()
    if blob is not None:
        return blob
    blob = ImageBlob(sha256=digest, width=width, height=height, mime="image/png", size=len(png))
    blob.file.save(f"{digest[:2]}/{digest}.png", ContentFile(png), save=False)
    blob.save()
    return blob
