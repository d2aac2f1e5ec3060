"""The project's set-up contract: two README commands, CI calls the test one, the conda and
pip dependency lists agree, every CLI subcommand has --help, the table docs are current."""

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(spec: str) -> str:
    return re.split(r"[<>=!~\[; ]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_and_pyproject_name_the_same_packages():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_specs = py["dependencies"] + py["optional-dependencies"]["test"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    conda_specs = [s for s in pip_section if not s.startswith("-e")]
    norm = lambda specs: sorted(s.replace(" ", "").lower() for s in specs)
    assert norm(conda_specs) == norm(pip_specs), "environment.yml and pyproject.toml drifted apart"
    conda_python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    assert conda_python.replace("python", "") == py["requires-python"]


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```(?:sh|bash|console)?\n(.*?)```", readme, re.S).group(1)
    cmds = [ln.split("#")[0].strip() for ln in first_block.splitlines() if ln.split("#")[0].strip()]
    assert cmds == ["make report", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    body = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert body[-1] == "exec make test"
    assert all(ln.startswith(("set ", "cd ", "exec make test")) for ln in body)


def _subcommands():
    from kitlib.cli import build_parser

    p = build_parser()
    action = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
    return sorted(action.choices)


@pytest.mark.slow
def test_cli_help_on_every_subcommand(capsys, kit):
    from kitlib.cli import main

    subs = _subcommands()
    assert {"ingest", "summary", "triage", "investigations", "tables", "formats", "report", "lab"} <= set(subs)
    for cmd in [[]] + [[s] for s in subs]:
        with pytest.raises(SystemExit) as done:
            main([*cmd, "--help"])
        assert done.value.code == 0, cmd
        out = capsys.readouterr().out
        assert out.startswith("usage: kitlib"), (cmd, out[:200])
    r = kit("--help")
    assert r.returncode == 0 and "usage: kitlib" in r.stdout  # and as a program


def test_tables_doc_is_current(kit):
    r = kit("tables")
    assert r.returncode == 0, r.stderr
    doc = ROOT / "TABLES.md"
    assert doc.read_text() == r.stdout, "TABLES.md is stale: regenerate with `kitlib tables > TABLES.md`"


def test_every_table_column_has_a_doc():
    from kitlib import registry, tables

    registry.load()
    for t in tables.SCHEMAS.values():
        assert t.doc.strip(), t.name
        for c in t.columns:
            assert c.doc.strip(), f"{t.name}.{c.name}"
