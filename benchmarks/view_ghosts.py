"""How long a page of a model takes with ghost boxes (onnxtext/view/ghosts.py) and without them (every reader
linked to its value's producer, the drawing before ghosts), for the transformer exports of the real-model
corpus (tools/build_corpus.py; skipped when not built) and a generated chain of N residual blocks whose graph
input is read by every block (``long_chain`` of tests/test_view.py, the shape dot could not lay out).

Each run is a fresh process (scene, layout, HTML page, as ``onnxtext view`` does) killed after ``--limit``
seconds; the table gives medians of ``--repeat`` runs and the ratio with/without.

    python benchmarks/view_ghosts.py [--blocks 120] [--repeat 3] [--limit 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

PAGE = """
import sys
import onnxtext
from onnxtext.view import load_for_view
from onnxtext.view.ghosts import add_ghosts
from onnxtext.view.layout import layout
from onnxtext.view.render import html_page
from onnxtext.view.scene import build_scene
model, text = load_for_view(sys.argv[1])
scene = build_scene(model, text)
if sys.argv[2] == "ghosts":
    add_ghosts(scene)
html_page(scene, layout(scene), title="m")
print(sum(b.kind == "ghost" for b in scene.boxes))
"""


def run(path: str, mode: str, limit: float) -> tuple[float | None, int]:
    start = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", PAGE, path, mode], capture_output=True, text=True,
                           timeout=limit, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None, 0
    if r.returncode != 0:
        raise SystemExit(f"{path} ({mode}) failed: {r.stderr[-500:]}")
    return time.perf_counter() - start, int(r.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=float, default=60.0)
    args = ap.parse_args()
    import realmodels
    from test_view import long_chain

    models = []
    with tempfile.TemporaryDirectory() as tmp:
        chain = os.path.join(tmp, "chain.onnxtext")
        with open(chain, "w", encoding="utf-8") as f:
            f.write(long_chain(args.blocks, shared_input=True))
        models.append((f"chain of {args.blocks} blocks", chain))
        names = [m.name for m in realmodels.corpus_models("transformers")] + ["torch_encoder_ts"]
        models += [(m.name, str(m.path)) for m in realmodels.corpus_models() if m.name in names]
        if len(models) == 1:
            print(realmodels.NOT_BUILT)
        print(f"{'model':24} {'without ghosts s':>17} {'with ghosts s':>14} {'ratio':>6} {'ghosts':>6}")
        for name, path in models:
            times = {}
            ghosts = 0
            for mode in ("plain", "ghosts"):
                runs = []
                for _ in range(args.repeat):
                    t, g = run(path, mode, args.limit)
                    runs.append(t)
                    ghosts = max(ghosts, g)
                    if t is None:
                        break  # a run killed at the limit is not repeated
                times[mode] = None if None in runs else statistics.median(runs)
            plain, with_ghosts = times["plain"], times["ghosts"]
            shown = f"> {args.limit:.0f} (killed)" if plain is None else f"{plain:.2f}"
            ratio = f"{with_ghosts / plain:.2f}" if plain and with_ghosts else "-"
            wg = "killed" if with_ghosts is None else f"{with_ghosts:.2f}"
            print(f"{name:24} {shown:>17} {wg:>14} {ratio:>6} {ghosts:>6}")


if __name__ == "__main__":
    main()
