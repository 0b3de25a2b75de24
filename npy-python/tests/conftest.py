"""Shared fixtures: the repository's fixture files (made by real NumPy, tests/fixtures/*.py)."""

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
# make_pickle.py's tagged JSON of Python values: the object-array fixtures' expected values.
sys.path.insert(0, str(FIXTURES))


def pytest_configure(config):
    if not FIXTURES.is_dir():
        raise pytest.UsageError(f"no fixtures at {FIXTURES}: run from a checkout")
