"""Benchmark ``onnxtext lsp``: how long after an edit an editor shows the diagnostics of a large model.

    python benchmarks/lsp_speed.py [--nodes 1000,5000,20000] [--runs N]

One server process (``onnxtext lsp`` over stdio, driven by pygls's client as an editor does) opens a
generated model of N nodes (a Relu/Add chain, the shape of tests/test_lsp.py's 5,000-node document). Each
run changes one node's input to an undefined name, or back, and measures the wall time from sending
``didChange`` to receiving the ``publishDiagnostics`` of that version: the server's debounce
(``onnxtext.lsp.server.DEBOUNCE``) + parse + index + check + transport. Also measured on the same text:

* ``hover``: the round trip of a hover request right after the diagnostics arrived (it may wait for the
  index, which the server builds right after publishing the diagnostics);
* ``tokens``: a full semantic-tokens request (the Pygments lexer over the whole text);
* ``server CPU``: the CPU time the server process spent per edit (from /proc; the index is built right
  after the diagnostics, so part of it comes after they arrived); on a busy machine CPU time is steadier
  than wall time;
* ``check CPU``: the CPU time of ``onnxtext.check(text)`` in this process (its plain-tree cache emptied
  first, as for a new text), the work the server cannot skip (the peer the ratio is taken against);
* ``onnx C++ parse+check``: ``onnx.parser.parse_model`` + ``onnx.checker.check_model`` of the same text in
  onnx's syntax, the nearest external peer (it finds fewer problems: undefined names pass its parser).

Medians over ``--runs``; the machine may be busy (say so when quoting the numbers).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from lsprotocol import types as lsp  # noqa: E402

import onnxtext  # noqa: E402
from lsp_client import Client  # noqa: E402
from onnxtext.lsp.server import DEBOUNCE  # noqa: E402


def big_model(n: int) -> str:
    lines = ['<ir_version: 10, opset_import: ["": 21], domain: "bench.lsp">',
             "main (float[1, 8] x) => (float[1, 8] y) {", "  v0 = Relu(x)"]
    for i in range(1, n):
        lines.append(f"  v{i} = Add(v{i - 1}, x)" if i % 2 else f"  v{i} = Relu(v{i - 1})")
    lines += [f"  y = Identity(v{n - 1})", "}"]
    return "\n".join(lines) + "\n"


def _server_cpu(client: Client) -> float:
    """CPU seconds (user + system) the server process has used so far (Linux /proc)."""
    with open(f"/proc/{client.process.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu(fn) -> float:
    """CPU seconds of this thread spent in ``fn`` (steadier than wall time on a busy machine)."""
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(client: Client, n: int, runs: int) -> dict:
    uri = f"file:///bench/model_{n}.onnxtext"
    text = big_model(n)
    k = n * 4 // 5 // 2 * 2  # a Relu node four fifths down
    good, bad = f"v{k} = Relu(v{k - 1})", f"v{k} = Relu(v{k - 1}x)"
    broken = text.replace(good, bad)
    client.open(uri, text)
    client.wait_diagnostics(uri, 1, timeout=300)
    edits, hovers = [], []
    line = text[:text.index(good)].count("\n")
    cpus = []
    for r in range(runs):
        new = broken if r % 2 == 0 else text
        c0 = _server_cpu(client)
        t0 = time.perf_counter()
        version = client.change(uri, new)
        diags = client.wait_diagnostics(uri, version, timeout=300)
        edits.append(client.published_at(uri, version) - t0)
        cpus.append(_server_cpu(client) - c0)
        assert (len(diags) == 1) == (new is broken), diags
        hovers.append(timed(lambda: client.request("textDocument/hover", lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri), lsp.Position(line, 2)))))
    tokens = [timed(lambda: client.request("textDocument/semanticTokens/full", lsp.SemanticTokensParams(
        lsp.TextDocumentIdentifier(uri)))) for _ in range(max(3, runs // 2))]
    checks = [_cpu(lambda: _cold_check(text)) for _ in range(max(3, runs // 2))]
    onnx_text = onnxtext.to_text(onnxtext.parse_model(text), style="onnx")
    peers = [timed(lambda: _onnx_parse_check(onnx_text)) for _ in range(max(3, runs // 2))]
    return {"edit": statistics.median(edits), "cpu": statistics.median(cpus), "hover": statistics.median(hovers),
            "tokens": statistics.median(tokens),
            "check": statistics.median(checks), "onnx": statistics.median(peers)}


def _cold_check(text: str) -> None:
    """``onnxtext.check(text)`` as a first call on that text would run (the plain-tree cache emptied)."""
    from onnxtext.syntax.positions import plain_tree

    plain_tree.cache_clear()
    onnxtext.check(text)


def _onnx_parse_check(text: str) -> None:
    import onnx.checker
    import onnx.parser

    onnx.checker.check_model(onnx.parser.parse_model(text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="1000,5000,20000", help="model sizes (comma-separated node counts)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    sizes = [int(x) for x in args.nodes.split(",")]
    client = Client()
    try:
        rows = [(n, measure(client, n, args.runs)) for n in sizes]
    finally:
        client.close()
    print(f"onnxtext lsp: edit -> diagnostics (debounce {DEBOUNCE * 1000:.0f} ms included), medians of "
          f"{args.runs} runs; {os.cpu_count()} CPUs")
    print("wall: edit->diags, hover, tokens, onnx C++; CPU seconds: the server's per edit, check's in-process")
    print(f"{'nodes':>7} {'edit->diags':>12} {'server CPU':>11} {'check CPU':>10} {'CPU ratio':>10} {'hover':>8} "
          f"{'tokens':>8} {'onnx C++':>9}")
    for n, m in rows:
        print(f"{n:>7} {m['edit'] * 1000:>10.0f}ms {m['cpu'] * 1000:>9.0f}ms {m['check'] * 1000:>8.0f}ms "
              f"{m['cpu'] / m['check']:>9.2f}x {m['hover'] * 1000:>6.0f}ms {m['tokens'] * 1000:>6.0f}ms "
              f"{m['onnx'] * 1000:>7.0f}ms")


if __name__ == "__main__":
    main()
