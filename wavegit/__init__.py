"""wavegit: parallel workers on one git repository, without collisions."""

__version__ = "0.1.0"
