"""Fingerprint every table and every finding of every sample bundle, to prove that a change of
structure changed no behaviour.

Each bundle is read three ways: parsed in memory, opened on its `kitlib ingest` output (the lazy
path), and both again cut to the middle third of the bundle's time span. For each table the
fingerprint holds its row count, its columns with their dtypes, and a digest of its rows that
does not depend on their order; for the findings, their JSON as ``kitlib triage --json`` prints
it, plus each detector's status.

Usage:
    python tools/fingerprint.py sample_data > before.json
    ... change the structure ...
    python tools/fingerprint.py sample_data > after.json
    python tools/fingerprint.py --diff before.json after.json
    python tools/fingerprint.py --diff before.json after.json --ignore extent

A finding's ``extent`` (what it rests on) is in the fingerprint like the rest of its JSON: it is
what a reader is told, and a change of the rows a finding cites or counts changes it. ``--ignore``
leaves keys out of the comparison, e.g. against a fingerprint taken before a key existed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

# columns that time the kit's own work, and differ from run to run
TIMINGS = {"files": ["seconds"]}


def table_print(name: str, df: pd.DataFrame) -> dict:
    """Rows, columns and an order-free digest of one table (its timing columns left out)."""
    out = {"rows": len(df), "columns": {str(c): str(t) for c, t in df.dtypes.items()}}
    if len(df):
        text = df.drop(columns=TIMINGS.get(name, []), errors="ignore").astype("string").fillna("\x00<NA>")
        hashes = pd.util.hash_pandas_object(text, index=False).to_numpy().copy()
        hashes.sort()
        out["digest"] = hashlib.sha256(hashes.tobytes()).hexdigest()[:16]
    return out


def bundle_print(bundle) -> dict:
    import kitlib
    from kitlib import tables

    result = kitlib.triage(bundle)
    return {
        "tables": {name: table_print(name, bundle.table(name)) for name in sorted(tables.SCHEMAS)},
        "findings": [f.to_dict() for f in result.findings],
        "runs": {r.detector: r.status for r in result.runs},
    }


def middle_third(bundle) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    span = bundle.span()
    if span is None:
        return None
    lo, hi = span
    third = (hi - lo) / 3
    return lo + third, hi - third


def fingerprint(root: Path) -> dict:
    import kitlib
    from kitlib.bundle import window

    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(p for p in root.iterdir() if p.is_dir()):
            print(f"fingerprinting {path.name}", file=sys.stderr)
            memory = kitlib.load_bundle(path)
            store = Path(tmp) / path.name
            kitlib.ingest(path, store)
            lazy = kitlib.load(store)
            entry = {"memory": bundle_print(memory), "store": bundle_print(lazy)}
            cut = middle_third(memory)
            if cut is not None:
                entry["window"] = [str(cut[0]), str(cut[1])]
                entry["memory-window"] = bundle_print(window(kitlib.load_bundle(path), *cut))
                entry["store-window"] = bundle_print(window(kitlib.load(store), *cut))
            out[path.name] = entry
    return out


def diff(before: dict, after: dict, ignore: tuple[str, ...] = ()) -> list[str]:
    """Every difference between two fingerprints, one line each (keys named in ``ignore`` left
    out; lists of findings of the same length compared finding by finding)."""
    lines = []

    def walk(a, b, where: str) -> None:
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(isinstance(x, dict) for x in a):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{where}[{i}]")
        elif isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                if k in ignore:
                    continue
                if k not in a:
                    lines.append(f"{where}/{k}: only after")
                elif k not in b:
                    lines.append(f"{where}/{k}: only before")
                else:
                    walk(a[k], b[k], f"{where}/{k}")
        elif a != b:
            lines.append(f"{where}: {json.dumps(a)[:200]} -> {json.dumps(b)[:200]}")

    walk(before, after, "")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("root", nargs="?", default="sample_data", help="a folder of bundles (default: sample_data)")
    ap.add_argument(
        "--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two fingerprints and list the differences"
    )
    ap.add_argument("--ignore", action="append", default=[], metavar="KEY", help="leave KEY out of --diff")
    args = ap.parse_args(argv)
    if args.diff:
        before, after = (json.loads(Path(p).read_text()) for p in args.diff)
        lines = diff(before, after, tuple(args.ignore))
        print("\n".join(lines) if lines else "identical")
        return 1 if lines else 0
    json.dump(fingerprint(Path(args.root)), sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
