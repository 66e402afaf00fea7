"""Importing a task file (`Model`, `get_inputs`, `get_init_inputs`) as its own uniquely-named module.

Each import gets a fresh module name, so a task never shares module state with another import of the
same file or with a candidate's `model_new`. Every failure is `JobError("task", ...)` naming what is
missing or what raised.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from types import ModuleType

from .errors import JobError, phase

REQUIRED = ("Model", "get_inputs", "get_init_inputs")


def import_task(path: str) -> ModuleType:
    """Executes the task file under a unique module name and checks that it defines what it must."""
    if not os.path.isfile(path):
        raise JobError("task", f"task file {path} does not exist")
    name = f"cuda_agent_task_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise JobError("task", f"task file {path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    with phase("task", "importing the task file"):
        spec.loader.exec_module(module)
    check_task(module)
    return module


def check_task(module: ModuleType) -> None:
    """Raises JobError("task") naming the first required definition that is missing or not callable."""
    for attr in REQUIRED:
        value = getattr(module, attr, None)
        shown = attr if attr == "Model" else f"{attr}()"
        if value is None:
            raise JobError("task", f"task defines no {shown}")
        if not callable(value):
            raise JobError("task", f"task's {attr} is not callable")
