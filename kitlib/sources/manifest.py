"""The bundle manifest (``bundle.yaml`` / ``bundle.json``) and timezone names, checked."""

from __future__ import annotations

import json
from pathlib import Path

from kitlib.sources.files import MAX_LINE
from kitlib.sources.names import shown
from kitlib.sources.regular import open_regular

MANIFESTS = ("bundle.yaml", "bundle.yml", "bundle.json")


class ManifestError(ValueError):
    """A bundle manifest (bundle.yaml/json) or a timezone option that cannot be used; the
    message names the file and the key."""


def check_tz(name, where: str) -> str:
    """``name`` when it is a timezone this machine knows, else :class:`ManifestError` naming
    ``where`` (the manifest key or the option)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(name, str) or not name.strip():
        raise ManifestError(f"{where}: a timezone name is expected (like UTC or Europe/Berlin), got {name!r}")
    if name in ("UTC", "utc", "Z", "Etc/UTC"):
        return name
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ManifestError(
            f"{where}: unknown timezone {name!r} (use an IANA name such as UTC or Europe/Berlin)"
        ) from None
    return name


def load_manifest(root: Path) -> dict:
    """The bundle manifest at ``root`` as a checked mapping ({} when there is none). Any problem
    (bad YAML/JSON, YAML tags that would build Python objects, wrong types, unknown timezones)
    raises :class:`ManifestError` naming the file and key."""
    for name in MANIFESTS:
        p = root / name
        if p.is_file():
            try:
                with open_regular(p) as fh:
                    text = fh.read(MAX_LINE).decode("utf-8-sig")
            except (OSError, UnicodeDecodeError) as e:
                raise ManifestError(f"{shown(str(p))}: cannot be read ({e})") from None
            try:
                if name.endswith(".json"):
                    data = json.loads(text) if text.strip() else {}
                else:
                    import yaml

                    data = yaml.safe_load(text)
            except json.JSONDecodeError as e:
                raise ManifestError(f"{shown(str(p))}: invalid JSON at line {e.lineno} ({e.msg})") from None
            except Exception as e:  # noqa: BLE001 - yaml's errors (syntax, unsafe tags) and RecursionError
                mark = getattr(e, "problem_mark", None)
                where = f" at line {mark.line + 1}" if mark is not None else ""
                what = getattr(e, "problem", None) or type(e).__name__
                raise ManifestError(f"{shown(str(p))}: invalid YAML{where} ({what})") from None
            return _check_manifest(data if data is not None else {}, shown(str(p)))
    return {}


def _check_manifest(m, where: str) -> dict:
    if not isinstance(m, dict):
        raise ManifestError(
            f"{where}: a mapping of keys (files, hosts, host, tz) is expected, got a {type(m).__name__}"
        )
    for k in ("host", "tz"):
        if k in m and m[k] is not None and not isinstance(m[k], str):
            raise ManifestError(f"{where}: key '{k}' must be a string, got {type(m[k]).__name__}")
    if m.get("tz"):
        check_tz(m["tz"], f"{where}: key 'tz'")
    files = m.get("files")
    if files is not None:
        if not isinstance(files, dict):
            raise ManifestError(f"{where}: key 'files' must map path globs to host names, got {type(files).__name__}")
        for g, h in files.items():
            if not isinstance(g, str) or not isinstance(h, (str, int)):
                raise ManifestError(f"{where}: key 'files' entry {g!r}: a glob mapped to a host name is expected")
    layouts = m.get("layouts")
    if layouts is not None and not isinstance(layouts, dict):
        raise ManifestError(
            f"{where}: key 'layouts' must map path globs to layout patterns, got {type(layouts).__name__}"
        )
    hosts = m.get("hosts")
    if hosts is not None:
        if not isinstance(hosts, dict):
            raise ManifestError(
                f"{where}: key 'hosts' must map folder names to a host name or "
                f"{{name:, tz:}}, got {type(hosts).__name__}"
            )
        for folder, spec in hosts.items():
            if isinstance(spec, (str, int)):
                continue
            if not isinstance(spec, dict):
                raise ManifestError(f"{where}: key 'hosts.{folder}' must be a host name or {{name:, tz:}}")
            if "name" in spec and not isinstance(spec["name"], (str, int)):
                raise ManifestError(f"{where}: key 'hosts.{folder}.name' must be a string")
            if spec.get("tz") is not None:
                check_tz(spec["tz"], f"{where}: key 'hosts.{folder}.tz'")
    return m
