"""Generates the pictures of docs/ and README.md (docs/images/*.svg) with ``onnxtext view`` and
``onnxtext diff --html``'s SVG form. ``python tools/gen_pictures.py`` rewrites them; tests/test_view.py fails
when a checked-in picture differs from what this script makes (the layout is deterministic).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _example(name: str) -> str:
    with open(os.path.join(ROOT, "examples", name), encoding="utf-8") as f:
        return f.read()


def mlp_v2() -> str:
    """examples/mlp.onnxtext as a reviewer would get it back: one weight tuned, the hidden value renamed
    (as exporters do), Relu replaced by LeakyRelu and the softmax taken over the last axis."""
    text = _example("mlp.onnxtext")
    for old, new in [("    0.2, -0.1, 0.4, 0.0, 0.3, -0.2, 0.1, 0.5,", "    0.25, -0.1, 0.4, 0.0, 0.3, -0.2, 0.1, 0.5,"),
                     ("  h = Gemm(x, W1, b1)", "  hidden = Gemm(x, W1, b1)"),
                     ("  a = Relu(h)", "  a = LeakyRelu <alpha = 0.01> (hidden)"),
                     ("Softmax <axis = 1>", "Softmax <axis = -1>")]:
        if old not in text:
            raise SystemExit(f"examples/mlp.onnxtext changed: {old!r} not found; update tools/gen_pictures.py")
        text = text.replace(old, new)
    return text


def pictures() -> dict[str, str]:
    """Relative path -> SVG text of every generated picture."""
    sys.path.insert(0, ROOT)
    import onnxtext
    from onnxtext.view import diff_svg, view_svg

    out = {}
    for name in ("mlp", "control_flow"):
        text = _example(f"{name}.onnxtext")
        out[f"docs/images/view_{name}.svg"] = view_svg(onnxtext.parse_model(text), text)
    out["docs/images/diff_mlp.svg"] = diff_svg(onnxtext.parse_model(_example("mlp.onnxtext")),
                                              onnxtext.parse_model(mlp_v2()), a_label="mlp.onnxtext",
                                              b_label="mlp_v2.onnxtext")
    return out


def main() -> int:
    for rel, text in pictures().items():
        path = os.path.join(ROOT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
