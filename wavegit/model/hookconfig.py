"""Where the config file is, and the config keys the pre-push hook reads, cached without the config's schema.

``wavegit.model.config`` declares every key with its type, default and checks; importing it builds its schema
(19 M instructions of a warm hook's 193 M at 10,000 items, ARCHITECTURE.md). The hook reads eight keys and the
protected paths. ``HookSettings`` holds them, cached with the config file's text and the values of the
environment variables that override config keys (``WAVEGIT_*``): a warm hook reads the file, compares both and
imports nothing more. Any difference is a miss, and the hook loads the config as every command does
(``wavegit.hook.prepush.load_settings``), then caches what it read.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from wavegit import __version__
from wavegit.core import parsecache
from wavegit.core.errors import UsageError
from wavegit.core.smallfile import read_small_file

CONFIG_PATH = ".wavegit/config.yaml"
# Bump when a field is added or what one means changes: entries are keyed by the config's text, not the code.
_CACHE_FORMAT = f"wavegit-hook-config-2-{__version__}"


# A NamedTuple, annotations not postponed: see wavegit.core.git.GitResult.
class HookSettings(NamedTuple):
    """The config as the pre-push hook reads it (``wavegit.model.config.hook_settings`` of a ``Config``)."""

    tracker_branch: str
    base_branch: str
    tracker_path: str
    remote: str
    strict: bool
    """``hook.strict``, and the three below ``hook.``'s keys too."""
    max_age_s: float
    fetch_timeout_s: float
    refuse_on: tuple[str, ...]
    protected: tuple[str, ...] | None
    """``config.protected_of``: the protected paths, None for the defaults."""
    protected_error: str | None
    """Why ``protected_of`` refused the config's protected paths: raised by ``guards``, as it raises it."""

    def guards(self) -> tuple[str, ...] | None:
        """The protected paths (None: the defaults); UsageError when the config's are invalid."""
        if self.protected_error is not None:
            raise UsageError(self.protected_error)
        return self.protected


CONFIG_MAX_BYTES = 1 << 20
"""A config file is a few hundred bytes; past this it is refused unread."""


def read_file(repo_root: Path) -> str:
    """The config file's text, "" when there is none (both mean the defaults); OSError or UnicodeDecodeError
    when it cannot be read. The checkout holds it, so a commit may make it a symlink to ``/dev/zero`` or a
    FIFO: only a regular file of at most :data:`CONFIG_MAX_BYTES` is read (``core.smallfile``)."""
    try:
        return read_small_file(repo_root / CONFIG_PATH, CONFIG_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        return ""


def read_text(repo_root: Path) -> str | None:
    """``read_file``, None when it cannot be read (``config.load_config`` says why)."""
    try:
        return read_file(repo_root)
    except (OSError, UnicodeDecodeError):
        return None


def _entry(cache_dir: Path, text: str) -> Path:
    return parsecache.text_entry(cache_dir, "hookconfig", text)


def cached(cache_dir: Path, text: str, environ: Mapping[str, str]) -> HookSettings | None:
    """What ``remember`` stored for exactly this config text and these values of its variables, else None."""
    found = parsecache.read_text_keyed(_entry(cache_dir, text), _CACHE_FORMAT, text)
    if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], dict)
            and isinstance(found[1], tuple) and len(found[1]) == len(HookSettings._fields)):
        return None
    variables, fields = found
    if any(environ.get(name) != value for name, value in variables.items()):
        return None
    return HookSettings(*fields)


def remember(cache_dir: Path, text: str, variables: Mapping[str, str | None], settings: HookSettings) -> None:
    """Cache ``settings``, read from the config text ``text`` with ``variables`` (every variable that
    overrides a config key, None where unset)."""
    data = (dict(variables), tuple(settings))
    parsecache.write_text_keyed(_entry(cache_dir, text), _CACHE_FORMAT, text, data)
