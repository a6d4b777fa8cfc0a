"""What the files mean: the tracker and its items, the config, item statuses and their transitions, the wave
planner and its cache, the wave report. Reads files, runs nothing.
"""
