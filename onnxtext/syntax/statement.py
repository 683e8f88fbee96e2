"""Statements in the middle of a text parsed by the Lark grammar alone: the fast scanner's fallback, and the
place of a text's first error.

:mod:`onnxtext.syntax.fastparse` reads the plain forms of a text itself; a statement it does not fully
understand (a tensor attribute in an unusual spelling, a subgraph with ``type()`` values...) is handed to
:func:`parse_node_at` instead of abandoning the whole text. The statement is lexed from a
:class:`lark.utils.TextSlice` of the text (no copy) with the grammar's own contextual lexer and fed to its LALR
automaton with start symbol ``node``; it ends at the first token the automaton cannot take while a complete
node can end there. The protos come from the same :class:`onnxtext.syntax.builder.Builder` as a whole-text
Lark parse, so the result is the one Lark would build for that statement (``tests/test_fastparse.py``).
Positions there are relative to the statement: any failure raises ``Fallback``.

When a statement of the text's outermost level cannot be read at all, the text's first error is most likely
in it. :func:`locate_error` then raises the error the whole-text Lark parse would raise - same exception,
message, line, column, expected tokens, and a parser state that :mod:`.recovery` resumes from - while the
automaton reads only the text's skeleton before the statement (the main graph's and functions' lists with
their middle items left out, :class:`~onnxtext.syntax.fastlex.FailedAt`) and the text from the statement to
the error. A typo near the end of a 200,000-node text no longer costs a Lark parse of all of it.
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


class _Complete(Exception):
    """The statement was read completely: its error, if any, is not where the fast scanner stopped."""


def locate_error(text: str, start: str, failure) -> None:
    """Raise the error that the whole-text Lark parse (with the Builder) raises first for ``text`` parsed as
    ``start``, reading only the skeleton before ``failure.pos`` and the text from there to the error; return
    (nothing found) when the statement at ``failure.pos`` turns out to be complete, so the caller parses the
    whole text.

    The skeleton's tokens are fed to the automaton with no callbacks (no protos are built for them); the
    statement's tokens with the Builder's, exactly as in a whole-text parse, so its semantic errors come out
    too. A Builder callback that would take a value of the skeleton (the statement was reduced into its list)
    stops the run.
    """
    from lark.exceptions import UnexpectedInput
    from lark.lexer import LexerState, LexerThread, LineCounter, Token
    from lark.parsers.lalr_interactive_parser import InteractiveParser
    from lark.parsers.lalr_parser_state import ParseConf, ParserState
    from lark.utils import TextSlice

    from .builder import Builder
    from .grammar import get_parser

    frontend = get_parser(Builder(), key="build").parser
    automaton = frontend.parser.parser  # lark's _Parser: parse table and the Builder's callbacks
    conf = ParseConf(automaton.parse_table, {}, start)
    thread = LexerThread(frontend.lexer, None)
    state = ParserState(conf, thread)

    def tokens(begin: int, end: int):
        counter = LineCounter("\n")
        counter.char_pos = begin
        counter.line = text.count("\n", 0, begin) + 1
        counter.line_start_pos = text.rfind("\n", 0, begin) + 1
        counter.column = begin - counter.line_start_pos + 1
        thread.state = LexerState(TextSlice(text, begin, end), counter)
        return thread.lex(state)

    last = None
    try:
        at = 0
        for begin, end in sorted(failure.skips):  # the skeleton: no callbacks
            for last in tokens(at, begin):
                state.feed_token(last)
            at = max(at, end)
        for last in tokens(at, failure.pos):
            state.feed_token(last)
    except UnexpectedInput:
        return  # the skeleton itself does not parse: not a case for this shortcut
    try:
        base = None
        for last in tokens(failure.pos, len(text)):
            state.feed_token(last)
            if base is None:  # the statement's first token is shifted: from here on, build as Lark does
                base = len(state.value_stack) - 1
                conf.callbacks = _guarded(automaton.callbacks, state.value_stack, base)
        state.feed_token(Token.new_borrow_pos("$END", "", last) if last is not None else Token("$END", "", 0, 1, 1),
                         True)
    except _Complete:
        return
    except UnexpectedInput as e:
        e.interactive_parser = InteractiveParser(automaton, state, thread)  # as lark's parse loop attaches it
        raise


def _guarded(callbacks: dict, values: list, base: int) -> dict:
    """``callbacks`` (rule -> function) that raise :class:`_Complete` instead of taking a value below ``base``."""
    def guard(callback):
        def call(children):
            if len(values) < base:  # lark has already removed the children from the value stack
                raise _Complete
            return callback(children)
        return call

    return {rule: (f if isinstance(rule, str) else guard(f)) for rule, f in callbacks.items()}
