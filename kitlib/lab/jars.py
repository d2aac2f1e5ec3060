"""The lab's jars: Apache Kafka and its dependencies from Maven Central, fetched once with
``mvn dependency:copy-dependencies`` (the pom is the packaged ``templates/pom.xml``, or
``templates/pom-4.xml`` for a 4.x line) into a user cache folder, ``$KITLIB_LAB_JARS`` or else
``$XDG_CACHE_HOME/kafka-incident-kit/jars-<version>`` (``~/.cache`` when unset), and the Java class
path every lab JVM runs on.

The lab runs Kafka :data:`KAFKA_VERSION` (3.9.1) unless told otherwise: ``$KITLIB_LAB_KAFKA``
(or :func:`use_kafka`, which sets it for this process and the JVMs it starts) names another
release, ``4`` standing for :data:`KAFKA4_VERSION`. Each release has its own jars folder. Kafka 4
runs in KRaft mode only, as the lab always does; a few tool classes moved from the Scala ``kafka.*``
packages into ``org.apache.kafka.tools`` (:func:`tool_class` names the one to run).

Example:
    >>> use_kafka("4")
    '4.4.0'
    >>> tool_class("kafka.admin.ConfigCommand")
    'org.apache.kafka.tools.ConfigCommand'
    >>> use_kafka(None), tool_class("kafka.admin.ConfigCommand")
    ('3.9.1', 'kafka.admin.ConfigCommand')
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .errors import LabError
from .folders import APP_DIR, template

KAFKA_VERSION = "3.9.1"  # the lab's default release
KAFKA4_VERSION = "4.4.0"  # the newest 4.x release whose jars resolve with their dependencies
JARS_ENV = "KITLIB_LAB_JARS"  # overrides the jars cache folder
VERSION_ENV = "KITLIB_LAB_KAFKA"  # another Kafka release for the lab ("4" = KAFKA4_VERSION)
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# tool classes of 3.x that live elsewhere in 4.x (the Scala ones were rewritten in Java)
_MOVED_IN_4 = {
    "kafka.admin.ConfigCommand": "org.apache.kafka.tools.ConfigCommand",
    "kafka.tools.DumpLogSegments": "org.apache.kafka.tools.DumpLogSegments",
    "kafka.tools.JmxTool": "org.apache.kafka.tools.JmxTool",
    "kafka.admin.TopicCommand": "org.apache.kafka.tools.TopicCommand",
}


def kafka_version() -> str:
    """The Kafka release the lab runs: ``$KITLIB_LAB_KAFKA`` (a release such as ``4.1.1``, or
    ``4`` for :data:`KAFKA4_VERSION`), else :data:`KAFKA_VERSION`."""
    v = os.environ.get(VERSION_ENV, "").strip()
    if not v:
        return KAFKA_VERSION
    if v in ("4", "4.x"):
        return KAFKA4_VERSION
    if v in ("3", "3.9", "3.x"):
        return KAFKA_VERSION
    if not _VERSION.match(v) or int(v.split(".")[0]) not in (3, 4):
        raise LabError(
            f"Kafka release {v!r} (--kafka or ${VERSION_ENV}): give a release such as {KAFKA_VERSION} or "
            f"{KAFKA4_VERSION} (or 4)"
        )
    return v


def use_kafka(version: str | None) -> str:
    """Have the lab run ``version`` (``"4"``, ``"4.1.1"``, ...; ``None`` for the default) from now
    on, in this process and the JVMs it starts; returns the release chosen."""
    if version:
        os.environ[VERSION_ENV] = version
    else:
        os.environ.pop(VERSION_ENV, None)
    return kafka_version()


def kafka_major() -> int:
    """The major version of the release the lab runs (3 or 4)."""
    return int(kafka_version().split(".")[0])


def tool_class(main_class: str) -> str:
    """The class to run for one of Kafka's tools named by its 3.x class, on the release the lab runs."""
    return _MOVED_IN_4.get(main_class, main_class) if kafka_major() >= 4 else main_class


def pom_name() -> str:
    """The packaged pom of the release the lab runs."""
    return "pom-4.xml" if kafka_major() >= 4 else "pom.xml"


def jars_dir() -> Path:
    """Where the lab's jars are cached: ``$KITLIB_LAB_JARS``, else
    ``$XDG_CACHE_HOME/kafka-incident-kit/jars-<kafka version>`` (``~/.cache`` by default), one
    folder per release."""
    if os.environ.get(JARS_ENV):
        return Path(os.environ[JARS_ENV]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / APP_DIR / f"jars-{kafka_version()}"


def fetch_jars(quiet: bool = True, timeout: int = 600) -> Path:
    """Download the lab's jars once into :func:`jars_dir`. Needs Maven and Java.

    Example:
        >>> fetch_jars()   # doctest: +SKIP
        PosixPath('/home/me/.cache/kafka-incident-kit/jars-3.9.1')
    """
    import hashlib
    import tempfile

    version = kafka_version()
    jars = jars_dir()
    pom_text = template(pom_name())
    pom = hashlib.sha256(pom_text.encode()).hexdigest()[:12]
    marker = jars / f".complete-{version}-{pom}"  # a changed pom.xml fetches again
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
            f"-Dkafka.version={version}",
        ]
        if quiet:
            cmd.insert(1, "-q")
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp, check=False)
        except subprocess.TimeoutExpired:
            raise LabError(f"fetching jars took more than {timeout} s") from None
    if r.returncode != 0:
        raise LabError("mvn dependency:copy-dependencies failed:\n" + (r.stdout + r.stderr)[-3000:])
    marker.write_text(version + "\n")
    return jars


def classpath() -> str:
    """The class path of a lab JVM: every jar of :func:`fetch_jars` (fetched first if needed)."""
    return str(fetch_jars() / "*")
