"""A content-addressed parse cache: plain data (tuples, dicts, str, numbers) stored with ``marshal``.

Entries are keyed by what was parsed (a git blob SHA), so they are never stale; a missing, corrupt or
foreign entry reads as None and is simply parsed again. Writes are atomic (tmp + rename). Every tracker
commit (each claim and record) is a new blob, so a write keeps the :data:`KEEP` newest entries of its kind
and removes the older ones: a trial with a 2,100-item tracker left 117 MB of them after 15 minutes of waves.
A count, not a size: at 100,000 items the entries of one blob alone weigh some 100 MB.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
from collections.abc import Iterator
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


KEEP = 8
"""Entries kept per kind (``tracker``, ``columns``, ``config``, ``hookconfig``, ``hook``: the name up to its
first ``-``); the newest blobs' are what every command reads, a few kept for a clone that lags or races."""


def write(entry: Path, fmt: str, data: object) -> None:
    """Store ``data``, then remove all but the :data:`KEEP` newest entries of its kind; a failure
    (read-only dir, full disk) only costs speed, so it is ignored."""
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(marshal.dumps((fmt, data)))  # type: ignore[arg-type]
        os.replace(tmp, entry)
    except (OSError, ValueError):
        tmp.unlink(missing_ok=True)
        return
    _prune(entry, KEEP)


def _prune(written: Path, keep: int) -> None:
    """Newest written first: a hot entry written long ago is parsed once again at worst. Another process
    reading an entry removed here reads None and parses."""
    kind = written.name.split("-", 1)[0] + "-"
    others: list[tuple[float, str]] = []
    try:
        with os.scandir(written.parent) as listing:
            for found in listing:
                if found.name.startswith(kind) and found.name != written.name:  # not a ".name.tmp"
                    info = _stat(found)
                    if info is not None:
                        others.append((info.st_mtime, found.path))
    except OSError:
        return
    for _, path in sorted(others, reverse=True)[max(keep - 1, 0):]:
        with contextlib.suppress(OSError):  # removed by another process meanwhile: gone all the same
            os.unlink(path)


def _stat(found: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return found.stat()
    except OSError:
        return None  # removed by another process since the listing


def text_entry(cache_dir: Path, kind: str, text: str) -> Path:
    """Where data derived from the small ``text`` (a config file) is cached: named by a CRC-32 and the
    length, not a cryptographic hash (importing hashlib, OpenSSL, cost a warm hook 3-4 ms); the entry holds
    the text itself, which ``read_text_keyed`` compares, so a collision is only a miss."""
    import zlib

    data = text.encode("utf-8", "surrogatepass")
    return cache_dir / f"{kind}-{zlib.crc32(data):08x}-{len(data)}.marshal"


def read_text_keyed(entry: Path, fmt: str, text: str) -> object | None:
    """What ``write_text_keyed`` stored under ``entry`` for exactly ``text``, else None."""
    found = read(entry, fmt)
    if isinstance(found, tuple) and len(found) == 2 and found[0] == text:
        data: object = found[1]
        return data
    return None


def write_text_keyed(entry: Path, fmt: str, text: str, data: object) -> None:
    write(entry, fmt, (text, data))


def path_key(path: str, protected: tuple[str, ...] | None = None) -> str:
    """A short key of a file's display path (messages name it) and of the protected paths (validation
    depends on them) for cache entry names: a digest, not a checksum, since whoever commits the config
    could otherwise choose protected paths whose key is another set's, and read its validation."""
    try:
        # hashlib's own BLAKE2, without hashlib's import of OpenSSL (3-4 ms of every warm hook and plan).
        from _blake2 import blake2b
    except ImportError:  # an interpreter built without it
        from hashlib import blake2b

    key = path if protected is None else "\0".join((path, "protected", *protected))
    return blake2b(key.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def blob_sha(text: str) -> str:
    """The git blob SHA-1 of ``text`` encoded as UTF-8, exactly as ``git hash-object`` computes it."""
    return blob_sha_of_bytes(text.encode("utf-8", "surrogatepass"))


def blob_sha_of_bytes(data: bytes) -> str:
    """The git blob SHA-1 of ``data``, as ``git hash-object`` computes it."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a big node tree is built and walked (a parse that fills
    the cache).

    Composing allocates hundreds of thousands of acyclic objects, and the collector's repeated passes over
    them cost more than the parse itself (measured: 3-4x on a 10k-item tracker).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
