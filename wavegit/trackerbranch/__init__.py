"""The tracker branch: compare-and-swap commits of the tracker, the HALT switch, cost ceilings, and the
user's checkout after a local-only commit.
"""
