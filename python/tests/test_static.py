"""Tests of the `static` job (model_new.py exists, parses, defines ModelNew)."""

import subprocess
import sys

from helpers import PYTHON_DIR, run, write


def static_spec(tmp_path, candidate_dir):
    return {"result_path": str(tmp_path / "static.json"), "candidate_dir": str(candidate_dir)}


def test_valid_candidate_passes(tmp_path):
    write(tmp_path / "c" / "model_new.py", "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert result["ok"], result
    assert result["error_kind"] is None


def test_missing_model_new(tmp_path):
    (tmp_path / "c").mkdir()
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert not result["ok"]
    assert result["error_kind"] == "missing_model_new"
    assert "model_new.py" in result["reason"]


def test_syntax_error_names_the_line(tmp_path):
    write(tmp_path / "c" / "model_new.py", "import torch\n\nclass ModelNew(:\n    pass\n")
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert not result["ok"]
    assert result["error_kind"] == "syntax_error"
    assert result["reason"].startswith("model_new.py:3: "), result["reason"]


def test_null_bytes_are_a_syntax_error(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "model_new.py").write_bytes(b"class ModelNew:\n    pass\n\x00\n")
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert result["error_kind"] == "syntax_error"
    assert result["reason"].startswith("model_new.py:")


def test_no_top_level_model_new_class(tmp_path):
    write(tmp_path / "c" / "model_new.py",
          "ModelNew = object\n\ndef make():\n    class ModelNew:\n        pass\n    return ModelNew\n")
    result = run("static", static_spec(tmp_path, tmp_path / "c"))
    assert not result["ok"]
    assert result["error_kind"] == "no_model_new_class"


def test_static_job_does_not_import_torch(tmp_path):
    write(tmp_path / "c" / "model_new.py", "class ModelNew:\n    pass\n")
    spec = tmp_path / "spec.json"
    spec.write_text('{{"result_path": "{}", "candidate_dir": "{}"}}'.format(tmp_path / "r.json", tmp_path / "c"))
    code = (
        "import sys\n"
        "from cuda_agent_harness.__main__ import main\n"
        f"assert main(['static', '--spec', {str(spec)!r}]) == 0\n"
        "print('torch' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
    assert '"ok": true' in (tmp_path / "r.json").read_text()


def test_rules_false_skips_the_ast_rules_only(tmp_path):
    """The judge's test-only --test-skip-static: the AST rules are off, the shape checks are not."""
    write(tmp_path / "c" / "model_new.py", "import threading\nclass ModelNew:\n    pass\n")
    spec = static_spec(tmp_path, tmp_path / "c")
    refused = run("static", spec)
    assert refused["error_kind"] == "static_rule" and "host_thread" in refused["reason"]
    skipped = run("static", {**spec, "rules": False})
    assert skipped["ok"], skipped
    assert skipped["rules"] is False and skipped["violations"] == []
    write(tmp_path / "d" / "model_new.py", "import threading\nclass Other:\n    pass\n")
    shape = run("static", {**static_spec(tmp_path, tmp_path / "d"), "rules": False})
    assert shape["error_kind"] == "no_model_new_class"


def test_rules_must_be_a_boolean(tmp_path):
    write(tmp_path / "c" / "model_new.py", "class ModelNew:\n    pass\n")
    result = run("static", {**static_spec(tmp_path, tmp_path / "c"), "rules": "no"})
    assert result["error_kind"] == "internal"
