"""`kitlib lab` from a plain (non-editable) install into a new virtualenv outside the source
tree: the templates come from the installed package, the jars from the cache folder given by
KITLIB_LAB_JARS, the work folders from --work; nothing points into a checkout."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kitlib import lab

REPO = Path(__file__).resolve().parents[1]


def test_jars_and_work_folders_are_user_folders_unless_overridden(monkeypatch, tmp_path):
    for var in (lab.JARS_ENV, lab.WORK_ENV, "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert lab.jars_dir() == tmp_path / "home" / ".cache" / "kafka-incident-kit" / f"jars-{lab.KAFKA_VERSION}"
    assert lab.work_root() == tmp_path / "home" / ".local" / "state" / "kafka-incident-kit" / "lab"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xc"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xs"))
    assert lab.jars_dir() == tmp_path / "xc" / "kafka-incident-kit" / f"jars-{lab.KAFKA_VERSION}"
    assert lab.work_root() == tmp_path / "xs" / "kafka-incident-kit" / "lab"
    monkeypatch.setenv(lab.JARS_ENV, str(tmp_path / "jars"))
    monkeypatch.setenv(lab.WORK_ENV, str(tmp_path / "work"))
    assert (lab.jars_dir(), lab.work_root()) == (tmp_path / "jars", tmp_path / "work")
    assert lab.running() == []  # an empty work root has no lab process


def test_templates_are_package_data():
    assert "controller.quorum.voters={voters}" in lab.template("server.properties")
    assert "kafka-authorizer.log" in lab.template("log4j.properties")
    assert f"<kafka.version>{lab.KAFKA_VERSION}</kafka.version>" in lab.template("pom.xml")
    assert not (REPO / "lab" / "config").exists() and not (REPO / "lab" / "pom.xml").exists()


def _install(tmp_path: Path) -> Path:
    """A new venv holding a wheel-built kitlib; its dependencies are the running environment's
    (a .pth line), so the test needs no download beyond the build backend."""
    src = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "kitlib", src / "kitlib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "notebooks", src / "notebooks")  # shipped as kitlib/notebooks (setup.py)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    uv = Path(sys.executable).parent / "uv"
    cmd = (
        [str(uv), "pip", "install", "-q", "--python", str(py), "--no-deps", str(src)]
        if uv.exists()
        else [str(py), "-m", "pip", "install", "-q", "--no-deps", str(src)]
    )
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    site = next((venv / "lib").glob("python*/site-packages"))
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (site / "zz-test-deps.pth").write_text("\n".join(deps) + "\n")
    return venv


@pytest.mark.broker
@pytest.mark.slow
def test_lab_start_stop_from_an_installed_package(tmp_path):
    venv = _install(tmp_path)
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", lab.WORK_ENV)}
    env[lab.JARS_ENV] = str(lab.fetch_jars())  # reuse the cache; the installed kit must not fetch again
    # the new virtualenv borrows its dependencies from this one (see _install), and with them the data
    # files they install under <prefix>/share/jupyter (nbconvert's base templates): point Jupyter there
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    kit = [str(venv / "bin" / "kitlib")]

    def kitlib(*args, timeout=300):
        return subprocess.run(
            kit + list(args), capture_output=True, text=True, cwd=run_dir, env=env, timeout=timeout, check=False
        )

    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import kitlib.lab as m; print(m.__file__)"],
        capture_output=True,
        text=True,
        cwd=run_dir,
        env=env,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(venv)), where
    assert (Path(where).parent / "templates" / "server.properties").is_file()
    assert "KITLIB_LAB_JARS" in kitlib("lab", "start", "--help").stdout
    work = tmp_path / "work"
    r = kitlib("lab", "start", "--work", str(work), "--name", "installed")
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        assert "installed ready: bootstrap 127.0.0.1:" in r.stdout
        st = kitlib("lab", "status", "--work", str(work))
        assert "installed" in st.stdout and " running " in st.stdout, st.stdout
        assert (work / "installed" / "logs" / "server.log").is_file()
        assert str(REPO) not in (work / "installed" / "broker.out").read_text()
    finally:
        r = kitlib("lab", "stop", "--work", str(work))
    assert r.returncode == 0 and "stopped broker installed" in r.stdout, r.stdout + r.stderr
    assert "no lab process recorded" in kitlib("lab", "status", "--work", str(work)).stdout
    # the report finds its notebooks and templates in the installed package, not in a checkout
    bundle = tmp_path / "incident"
    shutil.copytree(REPO / "sample_data" / "compaction", bundle)
    r = kitlib(
        "report",
        str(bundle),
        "--out",
        str(tmp_path / "report"),
        "--jobs",
        "1",
        "--notebook",
        "triage",
        "--notebook",
        "compaction",
        timeout=900,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    page = (tmp_path / "report" / "compaction.html").read_text()
    assert "<svg" in page and "cleaner-buffer-too-small" in (tmp_path / "report" / "index.html").read_text()
