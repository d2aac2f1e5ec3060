"""Where the lab works on this machine, and what it brings along: the work root holding its
processes' work folders (``$KITLIB_LAB_WORK``, else ``$XDG_STATE_HOME/kafka-incident-kit/lab``),
a fresh work folder for one process, and the config templates packaged in
``kitlib/lab/templates``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

WORK_ENV = "KITLIB_LAB_WORK"  # overrides the root of the brokers' work folders
APP_DIR = "kafka-incident-kit"


def work_root() -> Path:
    """The folder holding the lab's work folders: ``$KITLIB_LAB_WORK``, else
    ``$XDG_STATE_HOME/kafka-incident-kit/lab`` (``~/.local/state`` by default)."""
    if os.environ.get(WORK_ENV):
        return Path(os.environ[WORK_ENV]).expanduser()
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / APP_DIR / "lab"


def fresh_work(work: Path) -> None:
    """Make ``work`` a new, empty work folder of the lab's (marked as the kit's own). A folder
    already there is removed only when the lab made it (it holds :data:`kitlib.ingestion.guard.MARKER`),
    when it lies in the lab's own state folder (``$XDG_STATE_HOME/kafka-incident-kit/lab``, whose
    older work folders carry no marker), or when it is empty; any other (a folder of the user's
    given as ``--work``) is refused before anything is touched."""
    from kitlib.ingestion import guard

    own = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / APP_DIR / "lab"
    if work.is_dir() and not work.is_symlink():
        inside_own = Path(os.path.realpath(own)) in Path(os.path.realpath(work)).parents
        if not inside_own:
            guard.check_replaceable(work, "the lab's work folder")
        shutil.rmtree(work)
    else:
        guard.check_replaceable(work, "the lab's work folder")
    work.mkdir(parents=True)
    guard.mark(work, "kitlib lab")


def template(name: str) -> str:
    """The text of one of the lab's packaged templates (server.properties, log4j.properties,
    connect-*.properties, pom.xml)."""
    from importlib import resources

    return resources.files("kitlib.lab").joinpath("templates", name).read_text()


def render(name: str, **values) -> str:
    """A packaged template with its ``{placeholders}`` filled."""
    text = template(name)
    for k, v in values.items():
        text = text.replace("{" + k + "}", str(v))
    return text
