"""``@metadata_props ["key": "value", ...]`` blocks for the fast scanner (syntax/fastvalues.py), read in one step.

torch's dynamo exporter puts a block of five such pairs (a stack trace among them) on every node and value: most of
its text. :class:`MetadataReader` splits a block at its quotes with ``str.split`` (a regular expression walks the
long strings character by character, about 30 times slower), decodes each distinct pair once per parse, and
keeps each pair as a serialized StringStringEntryProto; :func:`apply_annotations` merges a node's block into the
node with one ``MergeFromString``. The strings are unescaped by the builder's ``unescape``, and a block in any
other layout, or with a string that is not UTF-8 text, is left to the rule-by-rule reading.
"""

from __future__ import annotations

from ..wireformat import put_varint
from . import builder as _b
from .fastlex import WS_CHARS, _META_HEAD_RE, _META_RE, _STRING_RE


class MetadataPairs(_b.Pairs):
    """An ``@metadata_props ["key": "value", ...]`` block of plain strings read in one step: the (key bytes,
    value bytes) pairs the rule-by-rule reading gives (builder code applies it as any :class:`Pairs`), and in
    ``wire`` each pair as a length-prefixed serialized StringStringEntryProto, which :func:`apply_annotations`
    merges into a message in one ``MergeFromString`` (dynamo exports put such a block on every node)."""

    __slots__ = ("wire",)


_META_TAGS: dict = {}  # message class -> the wire tag of its metadata_props field, or b"" when it has none


def apply_annotations(msg, ann) -> None:
    """Builder.apply_annotations, with a lone :class:`MetadataPairs` block merged as wire bytes (same message)."""
    if ann is not None and len(ann) == 1 and ann[0][0] == "set" and type(ann[0][2]) is MetadataPairs:
        tag = _META_TAGS.get(type(msg))
        if tag is None:
            fd = msg.DESCRIPTOR.fields_by_name.get("metadata_props")
            tag = _META_TAGS[type(msg)] = b"" if fd is None else put_varint(fd.number << 3 | 2)
        if tag:
            msg.MergeFromString(tag + tag.join(ann[0][2].wire))
            return
    _b.apply_annotations(msg, ann)


def split_block(text: str):
    """The string contents (quotes removed, escapes kept) of ``@metadata_props ["k": "v", ...]`` ending in ``"]``, keys
    and values alternating, or None when ``text`` is not exactly such a block. Split at the quotes with str.split
    (a regular expression walks the long strings of a block character by character, about 30 times slower): a
    quote after an odd number of backslashes is part of its string, as in the STRING token."""
    parts = text.split('"')
    n = len(parts)
    if n < 5 or parts[-1] != "]" or not _META_HEAD_RE.fullmatch(parts[0]):
        return None
    if "\\" not in text:  # no escapes (value_info blocks): every quote bounds a string
        if n & 3 != 1:
            return None
        seps = parts[2:-1:2]
        for i in range(0, len(seps), 2):
            if seps[i].strip(WS_CHARS) != ":" or (i + 1 < len(seps) and seps[i + 1].strip(WS_CHARS) != ","):
                return None
        return parts[1::2]
    contents = []
    i = 1
    while True:
        c = parts[i]
        i += 1
        while c[-1:] == "\\" and (len(c) - len(c.rstrip("\\"))) & 1:  # an escaped quote: the string goes on
            if i >= n:
                return None
            c += '"' + parts[i]
            i += 1
        if i >= n:
            return None  # the last quote opened a string
        contents.append(c)
        sep = parts[i]
        i += 1
        if i == n:
            return contents if sep == "]" and not len(contents) & 1 else None
        if sep.strip(WS_CHARS) != (":" if len(contents) & 1 else ","):
            return None


_MAX_BLOCK = 1 << 20  # a block in another layout must not make each block split the text up to a distant `"]`


class MetadataReader:
    """The blocks of one text, with the per-parse caches (a block repeats on the nodes of one module)."""

    def __init__(self, text: str):
        self.s = text
        self._blocks: dict = {}  # block text -> MetadataPairs
        self._pairs: dict = {}  # (key, value) contents -> ((key bytes, value bytes), serialized entry)

    def block(self, p: int):
        """(MetadataPairs, end) for the ``@metadata_props [...]`` block of plain string pairs at ``p``, or None (then
        the rule-by-rule reading decides). A block repeats on the nodes of one module: each distinct block text
        is split once per parse, and each distinct pair decoded once."""
        s = self.s
        e = s.find('"]', p, p + _MAX_BLOCK)  # where the printer's blocks end; checked by the split, or by _META_RE
        if e > 0:
            text = s[p:e + 2]
            pairs = self._blocks.get(text)
            if pairs is None:
                contents = split_block(text)
                if contents is not None:
                    pairs = self._blocks[text] = self.pairs(contents)
                    if pairs is None:
                        return None  # a string that is not UTF-8 text
            if pairs is not None:
                return pairs, e + 2
        m = _META_RE.match(s, p)  # other layouts: a trailing comma, a line break before the bracket...
        if m is None:
            return None
        pairs = self.pairs([t[1:-1] for t in _STRING_RE.findall(m.group(1))])
        return None if pairs is None else (pairs, m.end())

    def pairs(self, contents: list):
        """The :class:`MetadataPairs` of string contents (quotes removed), keys and values alternating, or None
        when one is not UTF-8 text or has an escape the builder refuses."""
        cache = self._pairs
        pairs = MetadataPairs()
        wire = pairs.wire = []
        for i in range(0, len(contents), 2):
            k, v = contents[i], contents[i + 1]
            hit = cache.get((k, v))
            if hit is None:
                try:  # unescape, as the builder does; a string without escapes is its text's UTF-8 bytes
                    key = _b.unescape(f'"{k}"') if "\\" in k else k.encode("utf-8")
                    value = _b.unescape(f'"{v}"') if "\\" in v else v.encode("utf-8")
                    if type(key) is not bytes or type(value) is not bytes:
                        key.decode("utf-8"), value.decode("utf-8")  # escapes may give bytes that are not text
                except Exception:  # noqa: BLE001 - not UTF-8 text, or an escape the builder refuses
                    return None
                entry = b"\n" + put_varint(len(key)) + key + b"\x12" + put_varint(len(value)) + value
                hit = cache[(k, v)] = ((key, value), put_varint(len(entry)) + entry)
            pairs.append(hit[0])
            wire.append(hit[1])
        return pairs
