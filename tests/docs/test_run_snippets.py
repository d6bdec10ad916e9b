"""docs/gen/run_snippets.py's promises: a failing block fails the run, naming the page and line; an opt-out
needs a reason; a fence without a language is refused; a `# file:` block is written for a later block; and
agents a block leaves in the background do not outlive it."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "docs/gen/run_snippets.py"
BUILD = Path(os.environ.get("FTL_BUILD_DIR", ROOT / "build"))


def run_page(tmp_path, text):
    page = tmp_path / "page.md"
    page.write_text(text)
    return subprocess.run([sys.executable, str(RUNNER), "--build", str(BUILD), str(page)],
                          capture_output=True, text=True, timeout=120)


def test_a_passing_block_and_a_file_block_run(tmp_path):
    r = run_page(tmp_path, "```python\n# file: hello.py\nprint('hi')\n```\n\n```bash\npython3 hello.py | grep -q hi\n```\n")
    assert r.returncode == 0, r.stderr
    assert "1 blocks ran" in r.stdout


def test_a_failing_block_fails_the_run_and_names_its_line(tmp_path):
    r = run_page(tmp_path, "text\n\n```bash\ntrue\n```\n\n```bash\nfalse\n```\n")
    assert r.returncode == 1
    assert "page.md:7" in r.stderr


def test_a_failure_inside_a_pipeline_fails_the_block(tmp_path):
    r = run_page(tmp_path, "```bash\nfalse | cat\n```\n")
    assert r.returncode == 1


def test_an_opt_out_needs_a_reason(tmp_path):
    assert run_page(tmp_path, "```bash\n# not run by the docs test: needs a cluster\nkubectl get pods\n```\n").returncode == 0
    r = run_page(tmp_path, "```bash\n# not run by the docs test:\nkubectl get pods\n```\n")
    assert r.returncode != 0 and "needs a reason" in r.stderr


def test_a_fence_without_a_language_is_refused(tmp_path):
    r = run_page(tmp_path, "```\nls\n```\n")
    assert r.returncode != 0 and "without a language" in r.stderr


def test_background_processes_end_with_their_block(tmp_path):
    marker = tmp_path / "still-running"
    r = run_page(tmp_path, f"```bash\n(sleep 2; touch {marker}) &\n```\n")
    assert r.returncode == 0, r.stderr
    subprocess.run(["sleep", "3"])
    assert not marker.exists()


def test_a_fence_that_never_closes_is_refused(tmp_path):
    r = run_page(tmp_path, "```bash\ntrue\n")
    assert r.returncode != 0 and "never closes" in r.stderr
