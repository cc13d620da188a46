"""The one error type the verifier reports to the user (clear message, exit status 2)."""


class VerifyError(Exception):
    """Something the user can act on: a bad option, a crashing script, too few steps."""
