"""Protobufs -> text: everything that writes onnxtext.

* :mod:`.printer`: ``to_text`` and the reference ``Printer`` (one ``print_<message>`` per proto message);
* :mod:`.atoms`: names, strings and numbers as tokens (quoting, shortest round-trip floats);
* :mod:`.fastprint` / :mod:`.wirecolumns`: the wire-level fast path for large graphs, byte-identical to the
  reference printer.

Nothing here imports the parser, the checker or the evaluator.
"""
