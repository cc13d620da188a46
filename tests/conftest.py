from _paths import ROOT, SHARED  # noqa: F401  (kept importable for older tests)

import os
import shutil
import tempfile

_code_cache_dir = None


def pytest_configure(config):
    # trainlint keeps libcst's generated dataclass code in the user's cache folder
    # (trainlint.libcst_import); the suite and the processes it starts keep theirs in a folder of
    # their own instead of the home folder.
    global _code_cache_dir
    # Tests read the text report as text: a CI that forces colours must not put styles in it
    # (test_cli's colour test sets FORCE_COLOR itself).
    os.environ.pop("FORCE_COLOR", None)
    if "TRAINLINT_CODE_CACHE" not in os.environ:
        _code_cache_dir = tempfile.mkdtemp(prefix="trainlint-code-cache-")
        os.environ["TRAINLINT_CODE_CACHE"] = _code_cache_dir


def pytest_unconfigure(config):
    if _code_cache_dir is not None:
        shutil.rmtree(_code_cache_dir, ignore_errors=True)
