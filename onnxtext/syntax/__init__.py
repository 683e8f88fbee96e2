"""Text -> protobufs: everything that reads onnxtext.

* :mod:`.grammar` loads the Lark grammar of record (``grammar/*.lark``) and caches its tables;
* :mod:`.parser` is the API (``parse_model``, ``parse_graph``, ...): the fast scanner first, Lark otherwise;
* :mod:`.fastparse` / :mod:`.fastlex` read the common plain forms without Lark;
* :mod:`.builder` (with :mod:`.field_values` and :mod:`.literal_data`) builds protos while Lark parses;
* :mod:`.hints` and :mod:`.recovery` turn Lark failures into friendly :class:`~onnxtext.errors.ParseError`
  lists (hints, every error of a text);
* :mod:`.positions` maps element paths (``graph.node[3]``) back to line and column.

Nothing here imports the printer, the checker or the evaluator. Import the submodules directly; the
public API lives in :mod:`onnxtext`.
"""
