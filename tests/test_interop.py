"""Interop with onnx's own parser and printer (oracles only), both directions, on the whole corpus.

* theirs -> ours: every text onnx.printer writes that onnx.parser accepts parses here to the same proto.
* ours -> theirs: our ``style="onnx"`` output is accepted by onnx.parser and gives the proto we parse.

"The same proto" is up to field presence: onnx's parser sets fields it was not given (every node's empty
domain), ours leaves them unset (docs/syntax.md, Field presence), so explicit defaults are cleared first.
"""

import onnx.parser
import onnx.printer
import pytest

import onnxtext
from corpus import all_models, cleared

CASES = all_models()


@pytest.mark.parametrize("name,load", CASES, ids=[c[0] for c in CASES])
def test_onnx_printed_text_parses_to_same_proto(name, load):
    text = onnx.printer.to_text(load())
    theirs = onnx.parser.parse_model(text)
    assert cleared(onnxtext.parse_model(text)) == cleared(theirs)


@pytest.mark.parametrize("name,load", CASES, ids=[c[0] for c in CASES])
def test_our_onnx_style_text_is_accepted_by_onnx(name, load):
    text = onnxtext.to_text(load(), style="onnx", max_inline=None)
    assert cleared(onnx.parser.parse_model(text)) == cleared(onnxtext.parse_model(text))
