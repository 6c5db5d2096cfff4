"""Thin command-line entry points, one per DVC stage: `python -m stages.<name> --help`."""
