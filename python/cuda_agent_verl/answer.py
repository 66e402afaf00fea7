"""The solution files of a single-turn answer (stage 1), in the format the exported prompt asks
for (``cuda-agent export verl --mode single``; docs/training.md, "Answer format"):

    ```cuda kernels/my_op.cu
    ...
    ```

Every fenced block whose opening fence names a file after the language is a file; only
``model_new.py`` and files under ``kernels/`` are taken (what the judge reads), the last block of a
path wins, and a path with ``..``, a leading ``/`` or a backslash is ignored with a note.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^```[ \t]*([^\n`]*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def extract_files(answer: str) -> tuple[dict[str, str], list[str]]:
    """Returns ``(files, notes)``: path → text, and why blocks were skipped."""
    files: dict[str, str] = {}
    notes: list[str] = []
    for match in _FENCE.finditer(answer):
        words = match.group(1).split()
        if not words:
            continue
        path = words[-1]
        if path.startswith("file="):
            path = path[len("file=") :]
        if path != "model_new.py" and not path.startswith("kernels/"):
            if "/" in path or "." in path:
                notes.append(f"ignored block for {path}: only model_new.py and kernels/ files are taken")
            continue
        if ".." in path.split("/") or path.startswith("/") or "\\" in path or path.endswith("/"):
            notes.append(f"ignored block for {path}: not a plain relative path")
            continue
        files[path] = match.group(2)
    return files, notes
