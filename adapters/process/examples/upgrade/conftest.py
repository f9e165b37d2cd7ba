"""Loads the chaoskit pytest plugin from this repository (adapters/process/python), for
test_app.py. A project of yours would install it instead (pip install
path/to/chaoskit/adapters/process/python) or copy pytest_chaoskit.py next to its conftest.py."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

pytest_plugins = ["pytest_chaoskit"]
