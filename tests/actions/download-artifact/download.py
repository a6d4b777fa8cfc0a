"""The download stand-in: by ``name`` into ``path``; else every artifact (matching ``pattern``) into
``path/<artifact name>/``, or all into ``path`` with ``merge-multiple``."""

import fnmatch
import os
import shutil
import sys
from pathlib import Path

store = Path(os.environ["WAVEGIT_TEST_ARTIFACTS"])
target = Path(os.environ["GITHUB_WORKSPACE"], os.environ["TARGET"] or ".")
name, pattern = os.environ["NAME"], os.environ["PATTERN"]
artifacts = sorted(path for path in store.iterdir()) if store.is_dir() else []
if name:
    if not (store / name).is_dir():
        print(f"::error::Unable to download artifact(s): Artifact not found for name: {name}")
        sys.exit(1)
    shutil.copytree(store / name, target, dirs_exist_ok=True)
else:
    chosen = [path for path in artifacts if not pattern or fnmatch.fnmatchcase(path.name, pattern)]
    merge = os.environ["MERGE"] == "true"
    for artifact in chosen:
        shutil.copytree(artifact, target if merge else target / artifact.name, dirs_exist_ok=True)
    print(f"Total of {len(chosen)} artifact(s) downloaded")
with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as handle:
    handle.write(f"download-path={target}\n")
