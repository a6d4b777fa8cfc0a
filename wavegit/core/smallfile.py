"""Reading a file someone else chose: a regular file of bounded size, never a FIFO or a device.

A worker writes its cost file; a repository's checkout holds ``.wavegit/config.yaml``, which a commit may
make a symlink to ``/dev/zero`` or a FIFO: read as they are, every command (the pre-push hook included)
read until memory ran out, or blocked for good.
"""

import errno
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO


def read_small_file(path: Path, limit: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``; OSError for anything else (opened without blocking: a FIFO
    with no writer does not hang), for more than ``limit`` bytes, and, without ``follow_symlinks``, for a
    symlink."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        content = handle.read(limit + 1)
    if len(content) > limit:
        raise OSError(errno.EFBIG, f"over {limit} bytes")
    return content


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of a file the user named on the command line, whatever it is (a regular file, a pipe,
    ``/dev/stdin``); OSError for more than ``limit`` bytes, so that ``/dev/zero`` or a huge file given by
    mistake is refused instead of read until memory runs out."""
    with path.open("rb") as handle:
        return _read_stream(handle, limit)


def read_named(name: str, directory: Path, limit: int) -> bytes:
    """A file named on the command line, relative to ``directory`` (``-``: standard input), as
    :func:`read_bounded` reads it."""
    return _read_stream(sys.stdin.buffer, limit) if name == "-" else read_bounded(directory / name, limit)


def _read_stream(handle: BinaryIO, limit: int) -> bytes:
    """What ``handle`` holds, up to ``limit`` bytes; OSError past that (nothing more is read)."""
    content = handle.read(limit + 1)
    if len(content) > limit:
        raise OSError(errno.EFBIG, f"more than {limit:,} bytes")
    return content


def as_text(data: bytes) -> str:
    """``data`` as a file opened in text mode reads it: UTF-8, each line ending a plain newline
    (UnicodeDecodeError when it is not UTF-8)."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
