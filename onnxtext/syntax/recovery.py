"""Several syntax errors in one pass: panic-mode error recovery on lark's LALR parser.

The normal parse (parser.py, with the Builder) stops at the first error. When somebody asks for the other
errors (``ParseError.errors``, ``ParseError.format()``, ``onnxtext check``), :func:`further_errors` goes on
from the first error with the grammar's LALR automaton alone (the Builder's parser with its callbacks off: no
protos, no trees), and, at each error:

1. records it (converted to a ParseError and refined by :func:`parse_hints.improve`);
2. pops the parser's state stack back to the innermost *synchronising* construct being parsed: a node
   statement, a value entry of an input/output/value list, an attribute, a header entry, a record field,
   a training field, a top-level model item (function, training_info), a literal of a tensor;
3. pretends that construct was complete (pushes its goto state) and skips input tokens until one that may
   follow it, at bracket depth zero: ``,`` / ``)`` / ``>`` / ``}`` for list items; for statements (nodes,
   model items) the first token of a later line, or the error token itself when it starts a line (the
   previous statement was left unterminated, e.g. a missing ``)``);
4. resumes parsing there; in a list of node statements, the fast scanner first passes over the clean
   statements that follow (:func:`onnxtext.syntax.fastparse.skim_statements`), so recovery costs about one
   fast parse of the text, not an automaton run over every token.

Cascades: after a recovery, errors are not reported until 2 tokens have been shifted (an error that close
to the previous one is almost always a consequence of it), and never twice at the same position. At most
``MAX_ERRORS`` errors are collected. Prefer under-reporting: when no synchronising construct is on the
stack (an error in the graph's name, say), recovery stops.

Semantic errors that the Builder raises (tensor sizes, unknown attribute types...) are only seen by the
Builder: the first error of a text may be one, the further ones are syntax errors.
"""

from __future__ import annotations

import re
from copy import copy

from lark import Token

from ..errors import ParseError

MAX_ERRORS = 20
#: constructs to resynchronise on, and whether they are statements (resume at the start of a line)
_SYNC = {"node": True, "model_item": True, "value_entry": False, "fn_value": False, "attr": False,
         "fn_attr": False, "header_entry": False, "field": False, "pair": False, "training_field": True,
         "literal": False}
_OPENERS = {"LPAR": "RPAR", "LSQB": "RSQB", "LBRACE": "RBRACE", "LESSTHAN": "MORETHAN"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
_QUIET = 2  # tokens to shift after a recovery before errors are reported again
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LONE_CR = re.compile(r"\r(?!\n)")


def attach(error: ParseError, text: str, start: str, lark_error=None) -> ParseError:
    """Arrange for ``error.errors`` to find the other errors of ``text`` (lazily, when first asked).

    ``lark_error``: the parser's exception for ``error``, when it has one; recovery then starts from the
    parser's state at the error instead of parsing the text before it again.
    """
    resume = None
    ps = getattr(getattr(lark_error, "interactive_parser", None), "parser_state", None)
    if ps is not None:  # a state of the Builder's parser, whose tables collect() uses
        resume = (list(ps.state_stack), list(ps.value_stack), lark_error)
    error.set_further(lambda: further_errors(error, text, start, resume=resume))
    return error


def further_errors(first: ParseError, text: str, start: str, limit: int = MAX_ERRORS,
                   resume=None) -> list[ParseError]:
    """The other errors of ``text`` (``first``'s position excluded), at most ``limit - 1``."""
    if first.line is None or not isinstance(text, str):
        return []
    key = (first.line, first.column or 0)
    out = []
    try:
        found = collect(text, start, filename=first.filename, limit=limit + 1, resume=resume)
    except Exception:  # noqa: BLE001 - best effort: a recovery failure must never hide the first error
        return []
    for e in found:
        if (e.line, e.column or 0) != key and len(out) < limit - 1:
            out.append(e)
    return out


def collect(text: str, start: str, filename: str | None = None, limit: int = MAX_ERRORS,
            resume=None) -> list[ParseError]:
    """Every syntax error of ``text`` parsed from grammar rule ``start`` (at most ``limit``), in text order.

    ``resume``: (state stack, value stack, lark exception) of a parser that stopped at its first error: the
    parse continues from there (the text before it is not parsed again).
    """
    import lark
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    # a lone CR ends a line as LF does (grammar, comments, positions), but statement starts, blanking and skipping
    # below look for LF: work on a copy with each lone CR as LF (same length, same offsets, and the same tokens:
    # CR and LF are both whitespace), resuming from the same parser state
    source = text
    if "\r" in text and _LONE_CR.search(text):
        text = _LONE_CR.sub("\n", text)
        if resume is not None:  # lark counted lines of the original text by LF only: count them again
            _relocate(resume[2], text)

    from .builder import Builder
    from .fastparse import skim_statements
    from .grammar import get_parser
    from .parser import _convert, fix_position
    from .hints import improve

    # the Builder's parser (its callbacks switched off below): a resumed stack holds state numbers of its tables,
    # and the plain parser's tables, built or read from the shared cache at another moment (another process may
    # have rewritten it, e.g. for another grammar), can number the states differently
    lk = get_parser(Builder(), key="build")
    ip = lk.parse_interactive(text, start)
    conf = copy(ip.parser_state.parse_conf)
    conf.callbacks = {}  # only the automaton: no trees, no Builder
    ip.parser_state.parse_conf = conf
    state, lexer_state = ip.parser_state, ip.lexer_thread.state
    root = lk.parser.lexer.root_lexer
    errors: list[ParseError] = []
    # the text with the skipped statements blanked out (bracket hints must not see them again), rebuilt only
    # when an error is reported (at most ``limit`` times), not at every recovery: linear in the text's size
    blanks: list[tuple[int, int]] = []
    work, work_blanks = text, 0
    reported = set()
    quiet = 0
    last_sync = -1
    last = None
    pending = None
    if resume is not None:
        state.state_stack[:], state.value_stack[:], pending = resume
    recoveries = 0
    while len(errors) < limit and recoveries < 10 * limit:  # suppressed errors count too: garbage stays cheap
        recoveries += 1
        try:
            if pending is not None:
                e, pending = pending, None
                raise e
            for tok in ip.lexer_thread.lex(state):
                state.feed_token(tok)
                last = tok
                quiet -= 1
            end = lark.Token.new_borrow_pos("$END", "", last) if last is not None else lark.Token("$END", "", 0, 1, 1)
            state.feed_token(end, True)
            break
        except UnexpectedToken as e:
            tok = e.token  # from feed_token, or from the contextual lexer's whole-grammar fallback
            at = tok.start_pos if tok.type != "$END" else len(text)
            if getattr(e, "interactive_parser", None) is None:
                e.interactive_parser = ip  # lets lark compute the exact set of acceptable tokens (e.accepts)
            error = e
        except UnexpectedCharacters as e:
            at, error = e.pos_in_stream, e
        if quiet <= 0 and at not in reported:
            if work_blanks != len(blanks):
                work, work_blanks = _blank(text, blanks), len(blanks)
            err = fix_position(improve(_convert(error, work, filename), work), text)
            err.source = source
            reported.add(at)
            errors.append(err)
        if isinstance(error, UnexpectedToken) and error.token.type == "$END":
            break
        if isinstance(error, UnexpectedCharacters) and text[at:at + 1] == '"':
            break  # an unterminated string swallows the rest of the text: what follows is noise
        span = _synchronise(state, root, lexer_state, text, at, skip_first=at <= last_sync)
        if span is None:
            break
        begin, last_sync, sync = span
        blanks.append((begin, last_sync))
        # in a list of node statements, the fast scanner passes over the clean statements that follow (reading
        # them with the automaton cost ~10 us per token): the automaton goes on at the last one it reads
        _move(lexer_state, text, skim_statements(text, last_sync) if sync == "node" else last_sync)
        quiet = _QUIET
    if errors:
        if work_blanks != len(blanks):
            work = _blank(text, blanks)
        hidden = _builder_error(work, start, filename)
        if hidden is not None and hidden.line is not None and (hidden.line, hidden.column or 0) < (
                errors[0].line or 0, errors[0].column or 0):
            hidden.source, hidden.filename = source, filename
            errors.append(hidden)
    errors.sort(key=lambda e: (e.line or 0, e.column or 0))
    return errors[:limit]


def _relocate(error, text: str) -> None:
    """Set a lark error's line and column (of its token, for UnexpectedToken) from its offset in ``text``."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken

    if isinstance(error, UnexpectedToken) and error.token.type != "$END" and error.token.start_pos is not None:
        target, at = error.token, error.token.start_pos
    elif isinstance(error, UnexpectedCharacters):
        target, at = error, error.pos_in_stream
    else:
        return
    line = text.count("\n", 0, at) + 1
    column = at - text.rfind("\n", 0, at)
    target.line, target.column = line, column
    if target is not error:
        error.line, error.column = line, column


def _blank(text: str, spans) -> str:
    """``text`` with every character of the (begin, end) ``spans`` but line breaks replaced by a space."""
    parts, pos = [], 0
    for begin, end in sorted(spans):
        begin = max(begin, pos)
        if end <= begin:
            continue
        parts.append(text[pos:begin])
        parts.append("\n".join(" " * len(line) for line in text[begin:end].split("\n")))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _builder_error(work: str, start: str, filename):
    """The first error of the normal parse (accelerated scanner, then Builder) of the text with the broken
    statements blanked out, or None.

    The Builder checks some things when it reduces a whole graph, so a syntax error later in the text hides a
    semantic error (tensor sizes...) before it. The caller keeps the error only when it comes before the first
    syntax error: blanking cannot create an error there, while one after it could be a consequence of blanking.
    """
    from .parser import _parse

    try:
        _parse(work, start, filename)
    except ParseError as e:
        e.set_further(list)  # this pass must not recover in turn
        return e
    except Exception:  # noqa: BLE001 - best effort
        return None
    return None


def _synchronise(state, root, lexer_state, text, at, skip_first):
    """Pop to a synchronising construct and skip to where it may end.

    Returns (offset where the abandoned construct began, offset to resume at, the construct's rule name), or
    None when there is no construct to synchronise on or the text ends first.
    """
    states = state.parse_conf.states
    stack, values = state.state_stack, state.value_stack
    for k in range(len(stack) - 1, -1, -1):
        sync = next((x for x in _SYNC if x in states[stack[k]]), None)
        if sync is not None:
            break
    else:
        return None
    # brackets opened inside the construct and not closed before the error (reduced values are balanced)
    open_: list = []
    for v in values[k:]:
        if isinstance(v, Token):
            _bracket(open_, v.type)
    begin = min(at, _first_offset(values[k:]))
    if _SYNC[sync]:  # a statement starts a line (resumed stacks may hold no token of its beginning)
        begin = text.rfind("\n", 0, begin) + 1
    del stack[k + 1:]
    del values[k:]
    stack.append(states[stack[k]][sync][1])
    values.append(None)
    follow = {t for t in states[stack[-1]] if t.isupper()}
    statement = _SYNC[sync]
    _move(lexer_state, text, at)
    first = True
    while True:
        if statement and not first:
            tok = _skip_to_candidate(open_, follow, lexer_state, text, root)
        else:
            tok = _next_token(root, lexer_state, text)
        if tok is None:
            return None
        pos = tok.start_pos
        fits = tok.type in follow or ("IDENT" in follow and _IDENT.match(tok.value) is not None)
        if first and skip_first and pos == at:
            pass  # resuming here failed before: this token must go
        elif first and statement and fits and _starts_line(text, pos):
            return begin, pos, sync  # the error token starts a statement: the previous one was left unterminated
        elif tok.type in _CLOSERS and _CLOSERS[tok.type] not in open_:
            if fits:
                return begin, pos, sync  # closes the enclosing list or block
            open_.clear()  # a stray closer
            first = False
            continue
        elif not open_ and fits and (not statement or _starts_line(text, pos)):
            return begin, pos, sync
        first = False
        _bracket(open_, tok.type)


# The tokens that matter while skipping to the end of a statement: brackets (a string or a comment holds none,
# and '=>' is not one) and line breaks (a statement resumes at the first token of a line). Lark's lexer, run on
# every token, cost ~20 us each: a bracket left open near the start of a 200,000-node text took a minute.
_SKIP_SCAN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|#[^\r\n]*|//[^\r\n]*|=>|[()\[\]{}<>]|\n')
_BRACKET_TYPES = {"(": "LPAR", ")": "RPAR", "[": "LSQB", "]": "RSQB", "{": "LBRACE", "}": "RBRACE", "<": "LESSTHAN",
                  ">": "MORETHAN"}


def _skip_to_candidate(open_, follow, lexer_state, text, root):
    """The next token that can end the skipping of a statement in :func:`_synchronise` (a closer of no bracket
    in ``open_``, or the first token of a line while no bracket is open), or None at the end of the text.
    Brackets in between are tracked in ``open_``; other tokens change nothing there. They are passed over with
    one regular expression instead of Lark's lexer, which gives the same brackets (strings, comments and '=>'
    are matched whole, as the lexer matches them)."""
    from lark import Token

    pos = lexer_state.line_ctr.char_pos
    while True:
        m = _SKIP_SCAN.search(text, pos)
        if m is None:
            return None
        c = m.group()
        if c == "\n":
            if open_:
                pos = m.end()
                continue
            _seek(lexer_state, m.end())  # the next token may start a line: the lexer reads it
            return _next_token(root, lexer_state, text)
        kind = _BRACKET_TYPES.get(c)
        pos = m.end()
        if kind is None:  # a string, a comment or '=>'
            continue
        if kind in _OPENERS:  # it cannot end the skipping: only tracked (as the caller's _bracket does)
            open_.append(kind)
            continue
        if _CLOSERS[kind] in open_:
            _bracket(open_, kind)
            continue
        _seek(lexer_state, pos)  # a closer of nothing opened here: the caller decides
        return Token(kind, c, m.start())


def _seek(lexer_state, pos):
    """Put the lexer at text offset ``pos`` without counting lines (O(1), unlike :func:`_move`): the tokens read
    while skipping are used for their kind and offset only, and the caller moves the lexer properly after."""
    lexer_state.line_ctr.char_pos = pos
    lexer_state.last_token = None


def _first_offset(values) -> int:
    """Text offset of the first token in parser values (tokens and nested lists of them)."""
    for v in values:
        if isinstance(v, list):
            off = _first_offset(v)
            if off < 1 << 62:
                return off
        elif isinstance(v, Token) and v.start_pos is not None:
            return v.start_pos
    return 1 << 62


def _bracket(open_, ttype):
    """Track a token in the stack of open brackets (a closer closes its opener and any left open inside)."""
    if ttype in _OPENERS:
        open_.append(ttype)
    elif ttype in _CLOSERS and _CLOSERS[ttype] in open_:
        while open_.pop() != _CLOSERS[ttype]:
            pass


def _next_token(root, lexer_state, text):
    """The next token of the whole-grammar lexer (characters no terminal matches are skipped), or None at EOF."""
    from lark.exceptions import UnexpectedCharacters

    while True:
        try:
            return root.next_token(lexer_state)
        except EOFError:
            return None
        except UnexpectedCharacters:
            lexer_state.line_ctr.feed(text[lexer_state.line_ctr.char_pos])


def _starts_line(text, pos):
    i = text.rfind("\n", 0, pos) + 1
    return not text[i:pos].strip()


def _move(lexer_state, text, pos):
    """Put the lexer at text offset ``pos`` (line and column recomputed)."""
    lc = lexer_state.line_ctr
    lc.char_pos = pos
    lc.line = text.count("\n", 0, pos) + 1
    lc.line_start_pos = text.rfind("\n", 0, pos) + 1
    lc.column = pos - lc.line_start_pos + 1
    lexer_state.last_token = None
