"""Shared test helpers: real git repositories, trackers, waves, a GitHub API server, an in-memory GitHub."""
