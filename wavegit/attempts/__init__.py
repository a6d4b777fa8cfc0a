"""Where an attempt runs: its tree with a git directory of its own, the pool of trees, the sandbox, running a
worker or test process, reading the tree back as content, the cost it reported.
"""
