"""Graph pictures: ``onnxtext view`` (one model) and ``onnxtext diff --html`` (two models in one picture).

Pipeline: ``scene.py`` (model -> boxes, links, clusters) or ``diffscene.py`` (two models and their semantic
matching -> one marked scene), then ``layout.py`` (Graphviz dot via graphviz-pure), then ``render.py``
(static SVG markup; a self-contained HTML page around it with ``assets/``); between scene and layout,
``ghosts.py`` draws values read by many far-apart boxes as ghost references next to their readers. See docs/viewing.md.
"""

from __future__ import annotations

import os

__all__ = ["load_for_view", "view_html", "view_svg", "diff_html", "diff_svg"]


def load_for_view(path) -> tuple:
    """(ModelProto, source text or None) of a model file, binary or text. External data is not read:
    the picture shows references, not values."""
    from ..io import load, looks_like_text, read_text_or_bytes

    path = os.fspath(path)
    data = read_text_or_bytes(path)
    if looks_like_text(data) or path.endswith((".onnxtext", ".onnxtxt")):
        from ..syntax.parser import parse_model

        text = bytes(data).decode("utf-8")
        return parse_model(text, filename=path), text
    return load(path, load_external_data=False), None


def _scene(model, text):
    from .ghosts import add_ghosts
    from .scene import build_scene

    return add_ghosts(build_scene(model, text))


def view_html(model, text: str | None = None, *, title: str = "", source: str = "", expanded: bool = False) -> str:
    """One self-contained HTML page showing ``model`` (a ModelProto); ``text`` is the onnxtext it came from
    (for source lines); ``expanded`` opens every subgraph and function cluster initially."""
    from .layout import layout
    from .render import html_page

    scene = _scene(model, text)
    return html_page(scene, layout(scene), title=title or scene.title or "model", source=source,
                     expanded=expanded)


def view_svg(model, text: str | None = None) -> str:
    """A standalone SVG picture of ``model`` with every cluster drawn open."""
    from .layout import layout
    from .render import svg_markup

    scene = _scene(model, text)
    return _xml(svg_markup(scene, layout(scene), standalone=True))


def diff_html(a, b, *, a_label: str = "a", b_label: str = "b", expanded: bool = True) -> str:
    """Both models in one page: nodes matched by the semantic diff, added/removed/changed marked."""
    from .diffscene import build_diff_scene
    from .ghosts import add_ghosts
    from .layout import layout
    from .render import html_page

    scene = add_ghosts(build_diff_scene(a, b, a_label, b_label))
    return html_page(scene, layout(scene), title=f"{a_label} → {b_label}", expanded=expanded)


def diff_svg(a, b, *, a_label: str = "a", b_label: str = "b") -> str:
    from .diffscene import build_diff_scene
    from .ghosts import add_ghosts
    from .layout import layout
    from .render import svg_markup

    scene = add_ghosts(build_diff_scene(a, b, a_label, b_label))
    return _xml(svg_markup(scene, layout(scene), standalone=True))


def _xml(svg: str) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg
