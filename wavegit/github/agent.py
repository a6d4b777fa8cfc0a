"""The worker's CLI for the GitHub Action: ``python -m wavegit.github.agent [VERSION]``.

For a preset worker (``WAVEGIT_WORKER``, else the checkout's config) it prints the executable and the npm
package at its pin or at ``VERSION`` (``agent-version``), which ``action.yml`` installs unless the executable
is on ``PATH`` (docs/action.md, "Installs"); nothing for any other worker. A ``VERSION`` that is not a version
is exit 2 with one ``::error`` line. ``--all`` prints every preset's, for ``.ci/install-agents``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from wavegit.attempts.agents import PRESETS
from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_OK, WavegitError
from wavegit.core.repo import discover
from wavegit.model.config import load_config

AGENT_PACKAGES: dict[str, tuple[str, str, str]] = {
    name: (name, *preset.npm) for name, preset in PRESETS.items()}
"""preset -> (executable, npm package, pinned version); the pins are the presets' own (``Preset.npm``)."""
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+-]*")


def agent_install(worker: str, version: str = "") -> tuple[str, str] | None:
    """(executable, ``package@version``) of a preset worker's CLI; None for any other worker."""
    found = AGENT_PACKAGES.get(worker.strip())
    if found is None:
        return None
    executable, package, pinned = found
    return executable, f"{package}@{version or pinned}"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--all"]:
        for preset in AGENT_PACKAGES:
            print(*(agent_install(preset) or ()))
        return EXIT_OK
    version = args[0] if args else ""
    if len(args) > 1 or (version and not _VERSION.fullmatch(version)):
        print(f"::error title=wavegit action::input agent-version: {version!r} is not a version "
              "(e.g. 1.2.3)")
        return EXIT_BAD_INPUT
    try:
        root = discover(Path.cwd()).root
    except WavegitError:
        root = Path.cwd()
    try:
        worker = load_config(root).worker
    except WavegitError as exc:
        print(f"::error title=wavegit action::{exc}")
        return EXIT_BAD_INPUT
    found = agent_install(worker, version)
    if found is None and version:
        print(f"::error title=wavegit action::input agent-version applies to the workers "
              f"{', '.join(AGENT_PACKAGES)} only, not {worker!r}")
        return EXIT_BAD_INPUT
    if found is not None:
        print(*found)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
