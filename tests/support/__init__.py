"""Test support (on sys.path through pytest's ``pythonpath``): shared systems, paths and the peer models."""
