"""``onnxtext git-setup``: make git show .onnx files as onnxtext in diffs, ``git log -p`` and ``git show``.

It writes, for the current repository (or with ``--global`` for the user):

* an attributes line ``*.onnx diff=onnx`` (``.gitattributes`` at the top of the work tree; with ``--global``
  the file git reads as ``core.attributesFile``), appended only when not already there;
* ``diff.onnx.textconv`` (default ``onnxtext print --elide``: big tensors become one-line summaries with a
  hash, min, max and mean, so a changed weight is one changed line instead of megabytes of base64);
* ``diff.onnx.cachetextconv true`` (git caches the text per blob in refs/notes/textconv/onnx);
* ``diff.onnx.xfuncname``: a pattern matching the first line of a graph or function, so hunk headers name
  the graph or function a change is in;
* ``difftool.onnxtext.cmd``: ``git difftool -t onnxtext -- model.onnx`` draws both versions of each changed
  model in one picture (``onnxtext diff --html``, a page in the temporary directory opened in the browser).

git hands textconv a temporary copy of the file, so external-data tensors print as references
(``["location": ..., "offset": ..., "length": ...]``) rather than failing.
"""

from __future__ import annotations

import os
import subprocess

from ..errors import OnnxTextError

HELP = "configure git to diff .onnx files as text"

DEFAULT_COMMAND = "onnxtext print --elide --brief"
#: Graphs and functions start at column 0 with their (possibly quoted) name, then ``(`` or ``<``
#: (see Printer.print_graph / print_function); nodes are indented, headers start with ``<``.
XFUNCNAME = r'^("[^"]*"|[A-Za-z_][A-Za-z0-9_.]*) [(<].*$'
#: git difftool runs this with $LOCAL, $REMOTE (the two versions) and $MERGED (the path in the work tree)
DIFFTOOL = ('onnxtext diff -q --html "${TMPDIR:-/tmp}/onnxtext-diff-$(basename "$MERGED").html" --open '
            '"$LOCAL" "$REMOTE"')


def add_arguments(p):
    p.add_argument("--global", dest="global_", action="store_true",
                   help="configure git for the user (~/.gitconfig and the global attributes file)")
    p.add_argument("--pattern", action="append", metavar="GLOB",
                   help="file pattern to diff as onnxtext (repeatable; default *.onnx)")
    p.add_argument("--command", dest="textconv", default=DEFAULT_COMMAND,
                   help=f"textconv command (default {DEFAULT_COMMAND!r}; 'onnxtext print' shows tensors in full)")


def run(args) -> int:
    scope = ["--global"] if args.global_ else []
    if args.global_:
        attributes = _global_attributes_file()
        where = "global git config"
    else:
        top = _git(["rev-parse", "--show-toplevel"], "not inside a git work tree (run 'git init' first, or use "
                                                     "--global)").strip()
        attributes = os.path.join(top, ".gitattributes")
        scope = ["--local"]
        where = top
    for key, value in (("diff.onnx.textconv", args.textconv), ("diff.onnx.cachetextconv", "true"),
                       ("diff.onnx.xfuncname", XFUNCNAME), ("difftool.onnxtext.cmd", DIFFTOOL)):
        _git(["config", *scope, key, value], f"cannot set {key}")
    added = _add_attribute_lines(attributes, [f"{p} diff=onnx" for p in (args.pattern or ["*.onnx"])])
    print(f"configured {where}: diff.onnx.textconv = {args.textconv!r}, cachetextconv, xfuncname")
    print("pictures of changes: git difftool -t onnxtext -- MODEL.onnx (onnxtext diff --html, opens a browser)")
    print(f"{attributes}: " + (", ".join(added) + " added" if added else "already set up"))
    return 0


def _git(argv: list[str], failure: str) -> str:
    try:
        r = subprocess.run(["git", *argv], capture_output=True, text=True)
    except FileNotFoundError:
        raise OnnxTextError("git is not installed (or not on PATH)") from None
    if r.returncode != 0:
        detail = r.stderr.strip().splitlines()
        raise OnnxTextError(f"{failure}" + (f" ({detail[-1]})" if detail else ""))
    return r.stdout


def _global_attributes_file() -> str:
    """The file git reads global attributes from: core.attributesFile, else $XDG_CONFIG_HOME/git/attributes."""
    r = subprocess.run(["git", "config", "--global", "--path", "core.attributesFile"], capture_output=True, text=True)
    if r.returncode == 0 and r.stdout.strip():
        return os.path.expanduser(r.stdout.strip())
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "git", "attributes")


def _add_attribute_lines(path: str, lines: list[str]) -> list[str]:
    """Append the lines that are not already in the attributes file (compared ignoring spacing)."""
    from ..io import atomic_write

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    present = {" ".join(line.split()) for line in text.splitlines()}
    new = [line for line in lines if " ".join(line.split()) not in present]
    if new:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        sep = "" if not text or text.endswith("\n") else "\n"
        atomic_write(path, text + sep + "".join(line + "\n" for line in new))
    return new
