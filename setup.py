# All metadata lives in pyproject.toml; this shim keeps `python setup.py develop` and old pips working.
from setuptools import setup

setup()
