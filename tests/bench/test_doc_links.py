"""Every repository path the docs name exists, and no doc links out of the repository.

Markdown links in README.md, docs/ and the folders' README files must resolve to a file or folder
inside the repository; a plain path such as `bench/host_line.py` or docs/decisions/timing.md in their
prose must exist. Comments and strings in the code (src/, python/, bench/, scripts/, tests/, .ci/,
cmake files) that cite a doc or a bench script must name one that exists. Records and scripts are
removed from time to time (git history keeps them); this keeps every citation of them honest.
Reads files only: well under a second.
"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Paths that name another repository's folders, not ours (docs/realworld.md describes where
# third-party solutions came from).
OTHER_REPOSITORIES = {
    ("docs/realworld.md", "docs/assets/solutions/"),
    ("docs/realworld.md", "src/scratch/"),
}
# A citation in code owned by another change, to be fixed there: the OpenAPI description of a
# JudgeResult names docs/judge.md, which is docs/judge-result.md.
KNOWN_IN_CODE = {("src/server/openapi.cc", "docs/judge.md")}

TOP = ("bench", "docs", "src", "python", "tests", "scripts", "configs", "templates", "examples",
       "cmake", ".ci")
PLAIN_PATH = re.compile(r"(?<![\w./-])((?:%s)/(?:[\w./+-]|\{[^{}\s]*\})*(?<=[\w/}]))"
                        % "|".join(re.escape(t) for t in TOP))
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # code blocks and spans hold no links
CODE_CITATION = re.compile(r"(?<![\w./-])((?:docs|bench)/[\w./-]*\.(?:md|py|sh))")


def tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *paths], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return out.split()


def doc_files() -> list[str]:
    return [p for p in tracked("*.md")
            if p.startswith("docs/") or p in ("README.md", "bench/README.md", "src/README.md",
                                               "examples/README.md")]


def expand_braces(path: str) -> list[str]:
    """`src/synth/llm_composer.{h,cc}` names two files."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [x for alt in m.group(1).split(",")
            for x in expand_braces(path[:m.start()] + alt + path[m.end():])]


def test_markdown_links_stay_in_the_repository_and_exist():
    bad = []
    for doc in doc_files():
        text = CODE.sub("", (ROOT / doc).read_text(encoding="utf-8"))
        for target in MD_LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            path = (ROOT / doc).parent / target.split("#", 1)[0]
            resolved = path.resolve()
            if ROOT not in resolved.parents and resolved != ROOT:
                bad.append(f"{doc}: {target} points outside the repository")
            elif not resolved.exists():
                bad.append(f"{doc}: {target} does not exist")
    assert not bad, "broken links (fix the link or restore the file):\n" + "\n".join(bad)


def test_repository_paths_named_in_the_docs_exist():
    bad = []
    for doc in doc_files():
        text = (ROOT / doc).read_text(encoding="utf-8")
        for raw in set(PLAIN_PATH.findall(text)):
            if (doc, raw) in OTHER_REPOSITORIES or any(c in raw for c in "*<>") or "DATE" in raw:
                continue
            for path in expand_braces(raw):
                if not (ROOT / path).exists():
                    bad.append(f"{doc}: {path}")
    assert not bad, ("paths named in the docs that are not in the repository (a removed record or "
                     "script: point at its successor, e.g. docs/decisions/README.md):\n" + "\n".join(sorted(bad)))


def test_code_cites_docs_and_bench_scripts_that_exist():
    bad = []
    for name in tracked("src", "python", "bench", "scripts", "tests", "configs", "templates", ".ci",
                        "cmake", "CMakeLists.txt"):
        if (name.startswith("bench/results/") or name.endswith((".json", ".jsonl"))
                or ROOT / name == Path(__file__).resolve()):  # this file names missing ones on purpose
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for cited in set(CODE_CITATION.findall(text)):
            if "DATE" in cited or (name, cited) in KNOWN_IN_CODE:
                continue
            if not (ROOT / cited).exists():
                bad.append(f"{name}: {cited}")
    assert not bad, "code cites files that do not exist:\n" + "\n".join(sorted(bad))


def test_the_checks_find_a_missing_file(tmp_path):
    """The patterns must match what the docs write, or the tests above would pass vacuously."""
    text = ("See [the record](decisions/gone.md) and `bench/gone_probe.py`, "
            "docs/decisions.md (tenth session).")
    assert MD_LINK.findall(text) == ["decisions/gone.md"]
    assert set(PLAIN_PATH.findall(text)) == {"bench/gone_probe.py", "docs/decisions.md"}
    assert set(CODE_CITATION.findall("# docs/decisions.md, tenth session")) == {"docs/decisions.md"}
    assert expand_braces("src/x.{h,cc}") == ["src/x.h", "src/x.cc"]
    assert PLAIN_PATH.findall("`src/x.{h,cc}`, examples/a,examples/b.") == ["src/x.{h,cc}", "examples/a",
                                                                          "examples/b"]
    assert not (ROOT / "docs/decisions.md").exists()
