"""What a worker is told: the item's prompt inside the contract it works under (``prompt_template``).

The template is ``string.Template`` text: ``$prompt``, ``$id``, ``$title``, ``$owns`` (one ``- path`` line
per owned pattern) and ``$test`` are replaced; ``$$`` is a literal ``$``. The item's own text is inserted as
it is, never read as a template. The default tells an agent what it may change, what will judge it, and
that changes elsewhere are discarded, so it does not have to learn that from a failed attempt.
"""

from __future__ import annotations

from string import Template

from wavegit.model import tracker

PLACEHOLDERS = ("prompt", "id", "title", "owns", "test")

DEFAULT_TEMPLATE = """\
$prompt

---
wavegit: this is item $id. You work in a tree of your own, a checkout of the repository.
You may change only these paths; a change anywhere else fails the attempt and none of it is kept:
$owns
Your change is verified by running this command on a clean checkout of it (exit 0 = verified):
  $test
wavegit takes what you leave in the tree: you need not commit, and nothing you do to git is kept.
"""


def template_problem(text: str) -> str | None:
    """Why ``text`` is not a usable template, or None (empty: the default)."""
    if not text:
        return None
    matches = list(Template.pattern.finditer(text))
    names = {m.group("named") or m.group("braced") for m in matches if m.group("named") or m.group("braced")}
    if any(m.group("invalid") is not None for m in matches):
        return "has a '$' that starts no placeholder (write $$ for a literal $)"
    unknown = sorted(names - set(PLACEHOLDERS))
    if unknown:
        known = ", ".join("$" + n for n in PLACEHOLDERS)
        return f"names unknown placeholder(s) {', '.join('$' + n for n in unknown)}; known: {known}"
    if "prompt" not in names:
        return "must contain $prompt (the item's own prompt)"
    return None


def render(template: str, item: tracker.Item) -> str:
    """The text the worker receives for ``item`` (``template`` empty: :data:`DEFAULT_TEMPLATE`)."""
    owns = "\n".join(f"  - {pattern}" for pattern in item.owns)
    return Template(template or DEFAULT_TEMPLATE).substitute(
        prompt=item.prompt.rstrip("\n"), id=item.id, title=item.title or item.id, owns=owns, test=item.test)
