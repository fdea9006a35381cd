"""Builders and helpers shared by the test modules: a test module imports from here (or
gets a fixture from conftest.py), never from another test module."""
