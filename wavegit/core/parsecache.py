"""A content-addressed parse cache: plain data (tuples, dicts, str, numbers) stored with ``marshal``.

Entries are keyed by what was parsed (a git blob SHA), so they are never stale; a missing, corrupt or
foreign entry reads as None and is simply parsed again. Writes are atomic (tmp + rename).
"""

from __future__ import annotations

import marshal
import os
from pathlib import Path


def read(entry: Path, fmt: str) -> object | None:
    """The data stored under ``entry`` by ``write`` with the same ``fmt``, else None."""
    try:
        data = marshal.loads(entry.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if isinstance(data, tuple) and len(data) == 2 and data[0] == fmt:
        found: object = data[1]
        return found
    return None


def write(entry: Path, fmt: str, data: object) -> None:
    """Store ``data``; a failure (read-only dir, full disk) only costs speed, so it is ignored."""
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(marshal.dumps((fmt, data)))  # type: ignore[arg-type]
        os.replace(tmp, entry)
    except (OSError, ValueError):
        tmp.unlink(missing_ok=True)


def path_key(path: str, protected: tuple[str, ...] | None = None) -> str:
    """A short key of a file's display path (messages name it) and of the protected paths (validation
    depends on them) for cache entry names: a digest, not a checksum, since whoever commits the config
    could otherwise choose protected paths whose key is another set's, and read its validation."""
    import hashlib

    key = path if protected is None else "\0".join((path, "protected", *protected))
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def blob_sha(text: str) -> str:
    """The git blob SHA-1 of ``text`` encoded as UTF-8, exactly as ``git hash-object`` computes it."""
    return blob_sha_of_bytes(text.encode("utf-8", "surrogatepass"))


def blob_sha_of_bytes(data: bytes) -> str:
    """The git blob SHA-1 of ``data``, as ``git hash-object`` computes it."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
