"""Where the checkout and the shared material are. A module of its own (not conftest): the
verifier's tests have a conftest too, and `from conftest import ...` would reach either."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
