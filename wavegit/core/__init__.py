"""Plumbing with no wavegit knowledge above it: errors and exit codes, the one function that runs git, the
git layer's named operations, the repository and its state folder, the YAML schema and editor.
"""
