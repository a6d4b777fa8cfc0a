"""What the pre-push hook prints about the pushed paths that collide with work in flight (imported only
when some do)."""

from collections.abc import Sequence

from wavegit.hook.prepush import Violation, wave_of_ref


def _describe(violation: Violation) -> str:
    owner = violation.owner
    if owner is None:
        wave = wave_of_ref(violation.ref)
        return f"  {violation.path}: outside the items of wave {wave} (pushed to {violation.ref})"
    pr = f", PR #{owner.pr}" if owner.pr is not None else ""
    return (f"  {violation.path}: owned by {owner.id} ({owner.status}, wave {owner.wave or '?'}{pr}; "
            f"pushed to {violation.ref})")


def format_refusal(violations: Sequence[Violation], remote: str = "origin") -> str:
    """The message printed when the push is refused: every path, its item, wave and PR, and what to do."""
    count = len({(v.ref, v.path) for v in violations})
    lines = [f"wavegit: push refused: {count} path(s) collide with work in flight:"]
    lines.extend(_describe(v) for v in violations)
    waves = sorted({v.owner.wave or "?" for v in violations if v.owner is not None})
    if waves:
        lines.append(f"Wait until wave {', '.join(waves)} is merged (its items leave in_progress/review), or "
                     "coordinate with whoever runs it.")
    # Without GitHub a wave in review is merged by hand, and that merge is refused too: say how it goes.
    by_hand = sorted({v.owner.wave for v in violations if v.owner is not None and v.owner.wave is not None
                      and v.owner.status == "review" and v.owner.pr is None})
    if by_hand:
        heads = ", ".join(f"{remote}/wavegit/{wave}" for wave in by_hand)
        lines.append(f"If this push merges wave {', '.join(by_hand)} itself (no pull request), its files "
                     f"must be exactly as on {heads} (a merge, squash, rebase or cherry-pick of it as "
                     f"pushed): `git fetch {remote}`, redo the merge from it, push, then run `wavegit sync` "
                     "to mark its items done; push a further change to those files after that.")
    if any(v.owner is None for v in violations):
        lines.append("A wave branch carries only its own items' files: push other changes to another branch.")
    lines.append("`git push --no-verify` skips this check, at your own risk.")
    return "\n".join(lines)


def format_tolerated(violations: Sequence[Violation]) -> str:
    """The warning for collisions on branches outside ``hook.refuse_on``: the push goes on."""
    count = len({(v.ref, v.path) for v in violations})
    lines = [f"warning: {count} pushed path(s) collide with work in flight; allowed, as hook.refuse_on does "
             "not name the branch (the hook stops its merge into one it names while the work is in flight):"]
    lines.extend(_describe(v) for v in violations)
    return "\n".join(lines)
