"""The upload stand-in: the files of ``path`` (a folder's contents, or files) into the artifact's folder."""

import os
import shutil
import sys
from pathlib import Path

store = Path(os.environ["WAVEGIT_TEST_ARTIFACTS"]) / os.environ["NAME"]
hidden = os.environ["HIDDEN"] == "true"
found: list[tuple[Path, Path]] = []
for line in os.environ["PATHS"].splitlines():
    if not line.strip():
        continue
    given = Path(os.environ["GITHUB_WORKSPACE"], line.strip())
    if given.is_dir():
        found += [(file, file.relative_to(given)) for file in sorted(given.rglob("*")) if file.is_file()]
    elif given.is_file():
        found.append((given, Path(given.name)))
if not hidden:
    # upload-artifact v4.4+ leaves hidden files out unless asked (a dot in any part of the path).
    found = [(file, rel) for file, rel in found if not any(part.startswith(".") for part in file.parts)]
if not found:
    message = f"No files were found with the provided path: {os.environ['PATHS']}; nothing uploaded"
    if os.environ["IF_NONE"] == "error":
        print(f"::error::{message}")
        sys.exit(1)
    print(f"::warning::{message}" if os.environ["IF_NONE"] == "warn" else message)
    sys.exit(0)
if store.exists():
    if os.environ["OVERWRITE"] != "true":
        print(f"::error::Failed to CreateArtifact: an artifact with this name already exists: {store.name}")
        sys.exit(1)
    shutil.rmtree(store)
for file, rel in found:
    (store / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(file, store / rel)
print(f"Artifact {store.name} has been successfully uploaded ({len(found)} files)")
