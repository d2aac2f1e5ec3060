"""The lab's jars: Apache Kafka and its dependencies from Maven Central, fetched once with
``mvn dependency:copy-dependencies`` (the pom is the packaged ``templates/pom.xml``) into a user
cache folder, ``$KITLIB_LAB_JARS`` or else ``$XDG_CACHE_HOME/kafka-incident-kit/jars-3.9.1``
(``~/.cache`` when unset), and the Java class path every lab JVM runs on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .errors import LabError
from .folders import APP_DIR, template

KAFKA_VERSION = "3.9.1"
JARS_ENV = "KITLIB_LAB_JARS"  # overrides the jars cache folder


def jars_dir() -> Path:
    """Where the lab's jars are cached: ``$KITLIB_LAB_JARS``, else
    ``$XDG_CACHE_HOME/kafka-incident-kit/jars-<kafka version>`` (``~/.cache`` by default)."""
    if os.environ.get(JARS_ENV):
        return Path(os.environ[JARS_ENV]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / APP_DIR / f"jars-{KAFKA_VERSION}"


def fetch_jars(quiet: bool = True, timeout: int = 600) -> Path:
    """Download the lab's jars once into :func:`jars_dir`. Needs Maven and Java.

    Example:
        >>> fetch_jars()   # doctest: +SKIP
        PosixPath('/home/me/.cache/kafka-incident-kit/jars-3.9.1')
    """
    import hashlib
    import tempfile

    jars = jars_dir()
    pom_text = template("pom.xml")
    pom = hashlib.sha256(pom_text.encode()).hexdigest()[:12]
    marker = jars / f".complete-{KAFKA_VERSION}-{pom}"  # a changed pom.xml fetches again
    if marker.is_file():
        return jars
    if not shutil.which("mvn"):
        raise LabError(
            "Maven (`mvn`) is needed to fetch the Kafka jars from Maven Central; install it (apt-get install maven)"
        )
    if not shutil.which("java"):
        raise LabError("Java 17+ is needed to run the lab broker; install it (apt-get install openjdk-17-jre-headless)")
    jars.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kitlib-pom-") as tmp:
        (Path(tmp) / "pom.xml").write_text(pom_text)
        cmd = [
            "mvn",
            "-B",
            "-f",
            str(Path(tmp) / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={jars}",
            "-DincludeScope=runtime",
        ]
        if quiet:
            cmd.insert(1, "-q")
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp, check=False)
        except subprocess.TimeoutExpired:
            raise LabError(f"fetching jars took more than {timeout} s") from None
    if r.returncode != 0:
        raise LabError("mvn dependency:copy-dependencies failed:\n" + (r.stdout + r.stderr)[-3000:])
    marker.write_text(KAFKA_VERSION + "\n")
    return jars


def classpath() -> str:
    """The class path of a lab JVM: every jar of :func:`fetch_jars` (fetched first if needed)."""
    return str(fetch_jars() / "*")
