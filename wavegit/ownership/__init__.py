"""Who owns which paths: ownership patterns and the exact test of whether two of them overlap.

- ``patterns``: normalise, parse, case-fold and match a pattern (``normalize``, ``matches``).
- ``overlap``: the exact, case-insensitive overlap test of two patterns (``overlaps``), and of a query
  against an index's candidates.
- ``index``: many patterns by owner key (``OwnershipIndex``; ``FirstOverlap`` for planning).

On the hot paths (``plan``, ``hook pre-push``): import only the modules a command needs.
"""
