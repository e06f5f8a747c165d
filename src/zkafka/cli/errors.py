"""User-facing CLI errors (own module so `python -m zkafka.cli.main` and imports share the class)."""


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 1, no traceback."""
