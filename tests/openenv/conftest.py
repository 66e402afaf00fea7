"""The `stack` fixture of the OpenEnv tests (openenv_stack.py)."""

from openenv_stack import stack  # noqa: F401
