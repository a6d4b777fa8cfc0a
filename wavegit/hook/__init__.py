"""wavegit's git hooks: the pre-push check (:mod:`.prepush`) and installing it (:mod:`.install`).

Empty on purpose: git runs the pre-push hook on every push, and importing this package must cost nothing.
"""
