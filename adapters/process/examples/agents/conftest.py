"""Loads the chaoskit pytest plugin from this repository (adapters/process/python) for
test_support_agent.py; a team installs it instead (pip install path/to/chaoskit/adapters/process/python)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

pytest_plugins = ["pytest_chaoskit"]
