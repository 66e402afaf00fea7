"""The package boundaries: the trusted judging harness imports neither data synthesis nor training."""

import os
import subprocess
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(PYTHON_DIR, "cuda_agent_harness")
OUTSIDE = ("cuda_agent_synth", "cuda_agent_rl", "cuda_agent_verl", "cuda_agent_openenv", "cuda_agent_verifiers")


def harness_modules() -> list[str]:
    names = []
    for folder, _, files in os.walk(HARNESS):
        for name in sorted(files):
            if name.endswith(".py") and name != "__main__.py":
                rel = os.path.relpath(os.path.join(folder, name), PYTHON_DIR)[: -len(".py")]
                names.append(rel.replace(os.sep, ".").removesuffix(".__init__"))
    return sorted(names)


def test_the_harness_imports_no_synthesis_or_training_package():
    # Every module of the harness (and what the fork server preloads), in a fresh interpreter; then
    # none of the other packages may be in sys.modules.
    program = (
        "import importlib, json, sys\n"
        f"for name in {harness_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "from cuda_agent_harness import runner\n"
        "for module in runner.JOB_MODULES.values():\n"
        "    importlib.import_module(module)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {OUTSIDE!r})))\n"
    )
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_no_harness_job_is_data_synthesis():
    from cuda_agent_harness.runner import JOB_MODULES

    assert all(module.startswith("cuda_agent_harness.jobs.") for module in JOB_MODULES.values())
    assert "synth" not in JOB_MODULES


def test_pyproject_pins_match_setup_sh():
    # pyproject.toml's optional groups describe what scripts/setup.sh installs; a pin changed in one
    # place only fails here. The lint group is installed by setup.sh from pyproject.toml itself.
    import re
    import tomllib

    root = os.path.dirname(PYTHON_DIR)
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        groups = tomllib.load(f)["project"]["optional-dependencies"]
    with open(os.path.join(root, "scripts", "setup.sh"), encoding="utf-8") as f:
        setup = f.read()
    pinned_in_setup = dict(re.findall(r"([A-Za-z0-9_.-]+)==([0-9][A-Za-z0-9_.]*)", setup))
    for name, version in re.findall(r"([A-Z]+)_VERSION=([0-9.]+)", setup):  # MCP_VERSION=2.3.0
        pinned_in_setup[name.lower()] = version
    for group, pins in groups.items():
        if group == "lint":
            continue
        for pin in pins:
            if "==" not in pin:
                continue
            name, version = pin.split("==")
            found = pinned_in_setup.get(name)
            assert found == version, f"{group}: {pin} in pyproject.toml, {name}=={found} in scripts/setup.sh"
    assert '["optional-dependencies"]["lint"]' in setup


# The harness's settings come in its spec; the process environment is only plumbed (the fork server
# sets each job's, hardware_queues hides one variable from candidate code), and spec.py reads the one
# fact of it a job needs (caching_allocator_off).
ENVIRONMENT_PLUMBING = {"spec.py", "forkserver.py", "hardware_queues.py"}


def test_the_harness_reads_no_setting_from_the_environment():
    readers = []
    for folder, _, files in os.walk(HARNESS):
        for name in sorted(files):
            if not name.endswith(".py") or name in ENVIRONMENT_PLUMBING:
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if "os.environ" in line or "os.getenv" in line:
                        readers.append(f"{name}:{number}: {line.strip()}")
    assert not readers, "settings travel in the job's spec (docs/harness-protocol.md):\n" + "\n".join(readers)
