"""The host's environment is read in one place (src/common/host_environment.h, issue 49): no C++
module below the command line calls getenv, every variable the program reads is declared once, and
docs/cli.md lists each one."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
DECLARATIONS = SRC / "common" / "host_environment.cc"
# The command line's edge: the option parser's CUDA_AGENT_<FLAG> mirrors and the judge gateway's
# address are read there.
EDGE = SRC / "cli"

GETENV = re.compile(r"\b(?:secure_)?getenv\s*\(")


def declared_names() -> list[str]:
    return re.findall(r'\{V::k\w+,\s*"([^"]+)"', DECLARATIONS.read_text())


def getenv_calls(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    calls = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', line.split("//", 1)[0])  # no strings, no comments
        if GETENV.search(code):
            calls.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return calls


def test_no_module_below_the_command_line_reads_the_environment():
    found = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".cc", ".h") or path.name.endswith("_test.cc"):
            continue
        if path == DECLARATIONS or EDGE in path.parents:
            continue
        found += getenv_calls(path)
    assert not found, (
        "read the variable through HostValue (declare it in src/common/host_environment.cc) or make "
        "the setting a judge option (src/judge/judge_options.cc):\n" + "\n".join(found))


def test_the_scan_sees_a_getenv_call(tmp_path):
    sample = tmp_path / "sample.cc"
    sample.write_text('// getenv("X") in a comment\nconst char* s = "getenv(";\n'
                      'const char* v = std::getenv("HOME");\n')
    assert [c.split(": ", 1)[0] for c in getenv_calls(sample, tmp_path)] == ["sample.cc:3"]


def test_each_variable_is_declared_once_and_documented():
    names = declared_names()
    assert len(names) >= 20, names
    assert len(names) == len(set(names)), "declared twice"
    cli = (ROOT / "docs" / "cli.md").read_text()
    section = cli[cli.index("## The host's environment"):]
    section = section[:section.index("\n## ", 1)]
    missing = [n for n in names if f"| `{n}` |" not in section]
    assert not missing, f"docs/cli.md's host environment table lacks {missing}"
