"""A cache folder of a test's own that starts with the shared test cache's build products.

Tests whose kept jobs or standbys are keyed by their cache folder (test_kept_reference.py,
test_profile_standby.py) need a folder each; empty, each one's first judgement built the torch
extension's precompiled header and the example's objects again (~30 s of 2 CPUs per test). The build
products are content-addressed and written atomically (src/builder), so a copy of them is a cache
that builds nothing it already has; what is keyed by the folder (kept, standby, work, the store) is
never copied.
"""

import shutil
import subprocess
from pathlib import Path

from test_judge_cases import REPO

# The content-addressed build products of a cache folder (src/builder): safe to share by copying.
BUILD_PARTS = ("pch", "objects", "libraries", "link-stubs", "toolchain")

_warmed: set[Path] = set()


def warm(binary: Path, shared: Path, task: Path, candidate: Path) -> None:
    """Builds `candidate` into `shared` once per test process (nothing to do when it is there)."""
    if shared in _warmed:
        return
    proc = subprocess.run([str(binary), "judge", "--task", str(task), "--candidate", str(candidate),
                           "--device", "cpu", "--cache-dir", str(shared), "--until", "build", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _warmed.add(shared)


def seeded_cache(binary: Path, shared: Path, folder: Path, task: Path, candidate: Path) -> Path:
    """`folder` (new) holding a copy of `shared`'s build products, after `candidate` was built there."""
    warm(binary, shared, task, candidate)
    folder.mkdir(parents=True)
    for part in BUILD_PARTS:
        if (shared / part).is_dir():
            shutil.copytree(shared / part, folder / part)
    return folder
