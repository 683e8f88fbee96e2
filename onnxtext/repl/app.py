"""The REPL's terminal front end on prompt_toolkit: prompt, key bindings, history, highlighting, toolbar.

Enter runs the statement when it is complete (see :mod:`.statements`) and otherwise continues it on
a new line; an empty line forces it to run (so a mistake inside an open bracket is reported), and
Alt-Enter always inserts a newline. Ctrl-C cancels the input being typed, or a running evaluation;
Ctrl-D on an empty line leaves. When stdin is not a terminal, statements are read from it instead
(``onnxtext repl < script``), each reply printed, and the exit status says whether any failed.
"""

from __future__ import annotations

import os
import re
import sys

from .session import Reply, Session
from .statements import is_complete

PROMPT = "onnx> "
CONTINUATION = "  ... "
HISTORY_ENV = "ONNXTEXT_HISTORY"


def history_path() -> str:
    """``$ONNXTEXT_HISTORY``, else ``$XDG_DATA_HOME/onnxtext/history`` (``~/.local/share`` by default)."""
    explicit = os.environ.get(HISTORY_ENV)
    if explicit:
        return explicit
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "onnxtext", "history")


def _history():
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    path = history_path()
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a"):
            pass
    except OSError:
        return InMemoryHistory()  # a read-only home must not stop the REPL
    return FileHistory(path)


def _lexer():
    try:
        from prompt_toolkit.lexers import PygmentsLexer

        from ..lexer import OnnxTextLexer
    except ImportError:
        return None
    return PygmentsLexer(OnnxTextLexer)


def _key_bindings():
    from prompt_toolkit.key_binding import KeyBindings

    kb = KeyBindings()

    @kb.add("enter")
    def _enter(event):
        buf = event.current_buffer
        text = buf.text
        last_line_blank = "\n" in text and not text.rsplit("\n", 1)[1].strip()
        if last_line_blank or is_complete(text):
            buf.validate_and_handle()
        else:
            buf.insert_text("\n")

    @kb.add("escape", "enter")
    def _newline(event):
        event.current_buffer.insert_text("\n")

    return kb


def make_prompt(session: Session, *, input=None, output=None, history=None):
    """The PromptSession (tests pass a pipe input and a DummyOutput)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.application import get_app
    from .completion import ReplCompleter

    completer = ReplCompleter(session)

    def toolbar():
        try:
            doc = get_app().current_buffer.document
        except Exception:  # noqa: BLE001 - no toolbar is better than a crash while drawing
            return None
        return completer.signature_at(doc.text_before_cursor)

    return PromptSession(
        message=PROMPT, multiline=True, prompt_continuation=lambda width, line, soft: CONTINUATION,
        key_bindings=_key_bindings(), completer=completer, complete_while_typing=False,
        lexer=_lexer(), history=history if history is not None else _history(),
        bottom_toolbar=toolbar, input=input, output=output, enable_history_search=False)


def default_write(reply: Reply) -> None:
    from prompt_toolkit import print_formatted_text
    from prompt_toolkit.formatted_text import FormattedText

    if reply.text:
        print_formatted_text(FormattedText([("" if reply.ok else "ansired", reply.text)]))


def interact(session: Session, prompt, write=default_write) -> int:
    """The read-eval-print loop. Returns 0 (Ctrl-D or :quit)."""
    while True:
        try:
            text = prompt.prompt()
        except KeyboardInterrupt:  # Ctrl-C: drop the input being typed
            continue
        except EOFError:  # Ctrl-D
            return 0
        try:
            reply = session.execute(text)
        except KeyboardInterrupt:
            reply = Reply("interrupted; nothing changed", ok=False)
        write(reply)
        if reply.quit:
            return 0


def split_statements(text: str) -> list[str]:
    """A script's statements: lines are joined until the statement is complete (or a blank line)."""
    return [statement for _, statement in numbered_statements(text)]


def numbered_statements(text: str) -> list[tuple[int, str]]:
    """(first line number, statement) for each statement of a script."""
    out, current, first = [], [], 0
    for number, line in enumerate(text.splitlines(), 1):
        if not current and not line.strip():
            continue
        if not current:
            first = number
        current.append(line)
        joined = "\n".join(current)
        if is_complete(joined) or not line.strip():
            out.append((first, joined))
            current = []
    if current:
        out.append((first, "\n".join(current)))
    return out


_REPL_POSITION = re.compile(r"^<repl>:(\d+):", re.M)


def script_error(text: str, first: int, script: str) -> str:
    """An error reply located in the script: ``<repl>:1:5:`` becomes ``script:12:5:``; others get a prefix."""
    if _REPL_POSITION.search(text):
        return _REPL_POSITION.sub(lambda m: f"{script}:{first + int(m.group(1)) - 1}:", text)
    return f"{script}:{first}: {text}"


def run_script(session: Session, text: str, out=None, err=None, name: str = "<stdin>") -> int:
    """Run the statements of ``text`` in order; replies to ``out``, errors to ``err`` with their script line
    (``name:LINE:``); 1 if any failed."""
    out = out or sys.stdout
    err = err or sys.stderr
    status = 0
    for first, statement in numbered_statements(text):
        reply = session.execute(statement)
        if reply.text:
            print(reply.text if reply.ok else script_error(reply.text, first, name), file=out if reply.ok else err)
        if not reply.ok:
            status = 1
        if reply.quit:
            break
    return status


def main(path: str | None = None, *, seed: int | None = 0, stdin=None) -> int:
    """Start a session (from the model at ``path`` if given) and interact, or run stdin as a script."""
    session = Session(seed=seed)
    stdin = stdin or sys.stdin
    if path:
        reply = session.execute(":load " + _quote(path))
        print(reply.text, file=sys.stdout if reply.ok else sys.stderr)
        if not reply.ok:
            return 1
    if not stdin.isatty():
        return run_script(session, stdin.read())
    print("onnxtext repl: type a node such as  y = Relu(x)  or :help; Ctrl-D leaves.")
    return interact(session, make_prompt(session))


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)
