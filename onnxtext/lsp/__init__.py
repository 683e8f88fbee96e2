"""The onnxtext language server (``onnxtext lsp``), built on pygls.

Modules: :mod:`.index` (names, scopes, nodes, outline and folds of a text), :mod:`.analysis` (parse, check,
diagnostics with ranges and related information), :mod:`.hover`, :mod:`.completion`, :mod:`.tokens`
(semantic tokens from the Pygments lexer) and :mod:`.server` (the pygls wiring, debouncing, the
``onnxtext/print`` and ``onnxtext/compile`` requests for binary models). Only :mod:`.server` imports pygls;
the other modules need lsprotocol's types. See docs/editors.md.
"""
