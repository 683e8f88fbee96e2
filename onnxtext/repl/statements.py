"""What kind of statement the user typed, and whether it is complete yet.

This is the only syntax knowledge the REPL has of its own: everything else goes through the public
parser. Completeness uses lark's interactive parser on the real grammar: the text is fed token by
token; when the lexer and parser consume it all without error but the parser cannot accept the end of
input, the statement continues on the next line (an open ``{``, ``(``, ``<``, a string left open...).
"""

from __future__ import annotations

import re

#: Start symbols a REPL statement may be: a node, a function definition, or a whole pasted model.
STARTS = ("node", "function", "model")

_COMMENT_LINE = re.compile(r"^\s*(#|//(?!/)).*$|^\s*$")
_BARE_NAME = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*")\s*$')


def strip_blank(text: str) -> str:
    """The text without comment-only and blank lines (a statement made only of those does nothing)."""
    return "\n".join(line for line in text.splitlines() if not _COMMENT_LINE.match(line))


def kind(text: str) -> str:
    """``empty``, ``command`` (``:name ...``), ``name`` (show a value) or ``code`` (parse it)."""
    body = strip_blank(text)
    if not body.strip():
        return "empty"
    if body.lstrip().startswith(":"):
        return "command"
    if _BARE_NAME.match(body):
        return "name"
    return "code"


def bare_name(text: str) -> str:
    """The value name of a ``name`` statement (quotes removed)."""
    m = _BARE_NAME.match(strip_blank(text))
    token = m.group(1)
    if token.startswith('"'):
        import onnxtext

        # let the real parser unescape the quoted name: `"a.b" = Identity(x)` names output "a.b"
        return onnxtext.parse_node(f"{token} = Identity(x)").output[0]
    return token


def _state(parser, text: str, start: str) -> str:
    """``complete``, ``incomplete`` or ``error`` for ``text`` parsed from ``start``."""
    import lark

    ip = parser.parse_interactive(text, start=start)
    try:
        for _ in ip.iter_parse():
            pass
    except lark.exceptions.UnexpectedCharacters as e:
        # an unterminated string (strings may span lines) is still being typed
        rest = text[e.pos_in_stream:]
        if rest.startswith('"') and rest.count('"') == 1:
            return "incomplete"
        return "error"
    except lark.exceptions.UnexpectedInput:
        return "error"
    return "complete" if "$END" in ip.accepts() else "incomplete"


def is_complete(text: str) -> bool:
    """True when ``text`` should be run now: a command, a complete statement, or one already in error.

    Only an unfinished statement (valid so far under some start symbol, none accepting it whole)
    returns False, so a typo is reported at once rather than waiting for more lines.
    """
    k = kind(text)
    if k in ("empty", "command", "name"):
        return True
    from ..syntax.grammar import get_parser

    parser = get_parser()
    states = {_state(parser, text, start) for start in STARTS}
    if "complete" in states:
        return True
    return "incomplete" not in states
