"""What the files mean: the tracker and its items, the config (with the keys the pre-push hook reads of it,
cached), item statuses and their transitions, the wave planner and its cache, the wave report. Reads files,
runs nothing.
"""
