"""The notice a notebook shows while it reads one of the kit's sample bundles.

Every notebook ships with the outputs of its default ``BUNDLE``, a sample bundle of the kit
(nbval checks them). An analyst who opens a notebook sees those outputs before running it on
their own bundle, so the setup cell of each notebook shows, right under it, which sample the
outputs come from and how to get their own: the notice is there only while the bundle read is a
sample, so it disappears on the first run on the analyst's bundle and stays in the stored outputs.

Example:
    >>> from kitlib.bundle import Bundle
    >>> is_sample(Bundle("sample_data/isr-flapping", {}))
    True
    >>> is_sample(Bundle("incidents/2026-11-23", {}))
    False
"""

from __future__ import annotations

from pathlib import Path

from kitlib.display.markup import HTML, esc

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"  # the kit's sample bundles (source checkout)


def is_sample(bundle) -> bool:
    """Whether ``bundle`` (a bundle, or its path) is one of the kit's sample bundles: a folder of
    the kit's ``sample_data/``, or a folder with a ``PROVENANCE.md`` (where every sample records its
    source) inside a folder named ``sample_data``."""
    root = getattr(bundle, "root", bundle)
    if root is None:
        return False
    path = Path(str(root)).resolve()
    if SAMPLES in path.parents or path == SAMPLES:
        return True
    return path.parent.name == "sample_data" and (path / "PROVENANCE.md").is_file()


def sample_note(bundle) -> HTML | None:
    """The notice that the outputs shown are those of a sample bundle (None for any other
    bundle). It names the sample by its folder name only, so it is the same on every run and
    wherever the kit is installed, and it holds no parameter assignment (a rendered report shows no
    code)."""
    if not is_sample(bundle):
        return None
    name = Path(str(getattr(bundle, "root", bundle))).name
    text = (
        f"Sample outputs: what this notebook shows is about the kit's sample bundle {name!r}, not your "
        "cluster. To see your own bundle, point the BUNDLE parameter at it (START and END at the "
        "incident) and run all cells, or render it with: kitlib report YOUR-BUNDLE --out DIR"
    )
    html = (
        "<div class='kit-sample-banner' style='border-left:4px solid #f59f00;background:#fff9db;"
        "padding:6px 10px;margin:4px 0'><b>Sample outputs:</b> what this notebook shows is about the "
        f"kit's sample bundle <code>{esc(name)}</code>, not your cluster. To see your own bundle, point "
        "the <code>BUNDLE</code> parameter at it (<code>START</code> and <code>END</code> at the incident) "
        "and run all cells, or render it with <code>kitlib report YOUR-BUNDLE --out DIR</code>.</div>"
    )
    return HTML(html, text)


def sample_notice(bundle) -> None:
    """Show :func:`sample_note` in the notebook when ``bundle`` is a sample; show nothing else."""
    note = sample_note(bundle)
    if note is not None:
        from IPython.display import display as show

        show(note)
