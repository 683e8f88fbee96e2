"""One node statement in the middle of a text, parsed by the Lark grammar: the fast scanner's fallback.

:mod:`onnxtext.syntax.fastparse` reads the plain forms of a text itself; a statement it does not fully
understand (a tensor attribute in an unusual spelling, a subgraph with ``type()`` values...) is handed here
instead of abandoning the whole text. The statement is lexed from a :class:`lark.utils.TextSlice` of the
text (no copy) with the grammar's own contextual lexer and fed to its LALR automaton with start symbol
``node``; it ends at the first token the automaton cannot take while a complete node can end there. The
protos come from the same :class:`onnxtext.syntax.builder.Builder` as a whole-text Lark parse, so the
result is the one Lark would build for that statement (``tests/test_fastparse.py`` checks it).

Positions are relative to the statement (nothing here reports an error: any failure raises ``Fallback`` and
the caller's whole text goes to the Lark parse of record, which reports it with the right line and column).
"""

from __future__ import annotations

from .fastlex import Fallback


def parse_node_at(text: str, pos: int):
    """``(NodeProto, end)`` for the node statement starting at ``text[pos]`` (annotations included);
    ``end`` is where the next token starts. Raises ``Fallback`` when the statement does not parse."""
    from lark.exceptions import LarkError, UnexpectedToken
    from lark.lexer import LexerState, LexerThread, LineCounter, Token
    from lark.utils import TextSlice

    from .builder import Builder
    from .grammar import get_parser

    frontend = get_parser(Builder(), key="build").parser
    counter = LineCounter("\n")
    counter.char_pos = counter.line_start_pos = pos
    thread = LexerThread(frontend.lexer, LexerState(TextSlice(text, pos, len(text)), counter))
    state = frontend.parser.parse_interactive(thread, "node").parser_state
    states = state.parse_conf.states
    end = len(text)
    try:
        try:
            for token in thread.lex(state):
                # LALR states are shared by the start symbols: after a complete node, the next statement's
                # first token may still trigger reductions; only a token that would be shifted continues it
                if "$END" in states[state.position] and not _shifts(states, state.state_stack, token.type):
                    end = token.start_pos
                    break
                state.feed_token(token)
        except UnexpectedToken as e:  # the contextual lexer met a token this state cannot take
            token = e.token
            if token is None or "$END" not in states[state.position]:
                raise Fallback from None
            end = token.start_pos
        node = state.feed_token(Token("$END", "", end, 1, 1), True)
    except Fallback:
        raise
    except (LarkError, ValueError, TypeError, OverflowError, RecursionError):
        raise Fallback from None
    if end is None or type(node).__name__ != "NodeProto":
        raise Fallback
    return node, end


def _shifts(states, stack, terminal: str) -> bool:
    """Whether the automaton with ``stack`` shifts ``terminal`` after the reductions it triggers (the
    stack itself is left alone; no callback runs)."""
    from lark.parsers.lalr_analysis import Shift

    stack = list(stack)
    while True:
        entry = states[stack[-1]].get(terminal)
        if entry is None:
            return False
        action, arg = entry
        if action is Shift:
            return True
        size = len(arg.expansion)
        if size:
            del stack[-size:]
        goto = states[stack[-1]].get(arg.origin.name)
        if goto is None:
            return False
        stack.append(goto[1])
