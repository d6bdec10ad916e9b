"""`pip install ./python` as a user runs it: scikit-build-core builds libftl.so (and ftlctl) from the C
sources with CMake and installs them inside the package; the installed package then loads its own copy
of the library (no FTL_LIBRARY, no build tree) and trains a one-worker step. Slow (a Release build of the
library): one test."""
import os
import subprocess
import sys
from pathlib import Path

from conftest import free_port

REPO = Path(__file__).resolve().parents[2]


def test_pip_install_builds_and_bundles_libftl(tmp_path):
    site, build = tmp_path / "site", tmp_path / "build"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), f"--config-settings=build-dir={build}", str(REPO / "python")],
                   check=True, timeout=1200)
    bundled = sorted(p.name for p in (site / "ftl" / "lib").glob("libftl.so*"))
    assert bundled, f"no libftl.so in {site / 'ftl' / 'lib'}"
    assert (site / "bin" / "ftlctl").exists() and (site / "bin" / "ftlrun").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("FTL_LIBRARY", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), FTL_INSECURE="1", FTL_BIND="127.0.0.1:0", FTL_RUN_DIR=str(tmp_path),
               FTL_LOG_LEVEL="warn")
    code = ("import ftl, ftl._lib as L\n"
            "print(L.lib()._name)\n"
            "with ftl.Agent(bind='127.0.0.1:%d') as a:\n"
            "    print(a.execute(lambda info: info.world_size), ftl.library_version() == ftl.__version__)\n")
    port = free_port()
    out = subprocess.run([sys.executable, "-c", code % port], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded, result = out.stdout.splitlines()
    assert loaded.startswith(str(site / "ftl" / "lib")), loaded
    assert result == "1 True", out.stdout
