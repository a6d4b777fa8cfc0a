"""GitHub API requests per wave against the wave's size: it should be flat.

For 1, 4, 16 and 64 items, a fresh repository with a bare ``origin`` (``make_repo`` of
``bench/wave_overhead.py``, a worker that writes its one owned file at once) and ``wavegit run --json`` as a
process with GitHub configured (``GITHUB_TOKEN``, ``GITHUB_REPOSITORY``, ``GITHUB_API_URL``) against the
fake GitHub server of the tests (``tests/helpers/ghserver.py``, backed by the same bare origin the wave
pushes to).
The publish wiring is the real one of ``wavegit run`` (``wavegit/github/publish.py``): PR, report comment,
and the merge gate's checks and status. Every request the server saw is counted, by kind.

    python bench/github_requests.py [--quick]
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import common
import wave_overhead

from tests.helpers import ghserver  # the GitHub API server of the tests (common puts the root on sys.path)

SIZES = (1, 4, 16, 64)
QUICK_SIZES = (1, 4)
LIMIT = 10
"""Issue 5: at most 10 requests for PR, comment and status, whatever the wave's size."""
_NUMBER = re.compile(r"/[0-9]+(?=/|$)")
_SHA = re.compile(r"/[0-9a-f]{40}(?=/|$)")


def kind_of(method: str, path: str, repo: str) -> str:
    """``METHOD /path`` with the repository, numbers and SHAs left out: one kind of request."""
    short = path.removeprefix(f"/repos/{repo}") or "/"
    return f"{method} {_SHA.sub('/{sha}', _NUMBER.sub('/{n}', short))}"


@dataclass(frozen=True)
class Count:
    items: int
    verified: int
    by_kind: Counter[str]
    pr: int | None

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())


def count_wave(base: Path, n_items: int) -> Count:
    where = base / f"items-{n_items}"
    where.mkdir()
    env = common.git_env(where / "home")
    clone = wave_overhead.make_repo(where, env, items=n_items, sleep_s=0)
    with ghserver.running(where / "origin.git") as server:
        _, report = wave_overhead.run_wave(clone, {**env, **ghserver.github_env(server)})
        kinds = Counter(kind_of(r.method, r.path, server.fake.repo) for r in server.fake.requests)
    items = report["items"]
    pr = report["pr"]
    assert isinstance(items, list) and (pr is None or isinstance(pr, int))
    return Count(n_items, sum(1 for item in items if item["verified"]), kinds, pr)


def result(quick: bool) -> common.Result:
    sizes = QUICK_SIZES if quick else SIZES
    with tempfile.TemporaryDirectory(prefix="wavegit-ghreq-", ignore_cleanup_errors=True) as tmp:
        base = Path(tmp)
        common.warm_bytecode()
        counts = [count_wave(base, n) for n in sizes]
    kinds = sorted({kind for c in counts for kind in c.by_kind}, key=lambda k: (k.split()[1], k))
    rows = [(f"`{kind}`", *(c.by_kind[kind] for c in counts)) for kind in kinds]
    rows += [("**total**", *(f"**{c.total}**" for c in counts)),
             ("items verified", *(c.verified for c in counts)),
             ("PR opened", *("yes" if c.pr else "**no**" for c in counts))]
    totals = {c.total for c in counts}
    flat = len(totals) == 1
    within = max(totals) <= LIMIT and all(c.pr for c in counts)
    body = [
        "## GitHub requests per wave",
        "",
        f"`python bench/github_requests.py{' --quick' if quick else ''}`: one `wavegit run` per size with "
        "GitHub configured, against the fake GitHub server of the tests (`tests/helpers/ghserver.py`, real "
        "PyGithub on the client side, the same bare origin behind it). The publish wiring is the real one "
        "of `wavegit run`. Every request the server saw, by kind (PR: find, open; comment: find, post; the "
        "merge gate: the PR, its files, the status; `/user`: the token's login), per wave size.",
        "",
        common.table(["request", *(f"{c.items} items" for c in counts)], rows,
                     numeric=tuple(range(1, len(counts) + 1))),
        "",
        f"- Requests per wave: {', '.join(str(c.total) for c in counts)} for "
        f"{', '.join(str(c.items) for c in counts)} items — {'flat' if flat else '**not flat**'}; "
        f"limit {LIMIT}: {common.verdict(within)}.",
        "",
    ]
    targets = (
        common.Target(5, "GitHub API requests per wave (PR + comment + status)", f"≤ {LIMIT}",
                      f"max {max(totals)}", within),
        common.Target(6, "GitHub requests per wave flat in the item count",
                      f"same for {', '.join(map(str, sizes))} items",
                      " / ".join(str(c.total) for c in counts), flat),
    )
    return common.Result("github", "\n".join(body), targets)


if __name__ == "__main__":
    common.quick_main(__doc__, result)
