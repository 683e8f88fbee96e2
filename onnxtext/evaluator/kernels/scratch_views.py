"""Views of the per-thread scratch buffers (``conv.scratch``) that a prepared closure reads at every call,
made once and remade only when a buffer was replaced.

``scratch(shape, dtype, slot)`` costs about 1-1.5 us a call (the size, the thread-local dict, a slice, a
view, a reshape), and a prepared conv's closure then slices and reshapes the result again (the window
destination, the row of ones, the cropped products): on the small CNNs' 3x3 layers (2x16x16x16 and
2x32x8x8, 50-70 us a call on a loaded machine) the closure with its views made once took about 7 us
less. The buffers stay the shared ones (own buffers per layer measured slower: they leave the cache),
so the views are checked at each call against the slot's current buffer (buffers only grow: a larger
request from another layer replaces it, and the views are then made again over the new one).
"""

from __future__ import annotations

from .conv import _SCRATCH


class ScratchViews:
    """``get()``: the tuple ``make()`` returns (views of the scratch buffers of ``slots``, at most two),
    made again only when one of those slots' buffers was replaced since. Per thread, like the buffers:
    a closure using it must only run on the thread that prepared it (PreparedConv checks)."""

    __slots__ = ("make", "first", "second", "bases", "views")

    def __init__(self, make, slots):
        self.make = make
        self.first = slots[0]
        self.second = slots[1] if len(slots) > 1 else None
        self.bases = self.views = None

    def get(self):
        bases = self.bases
        if bases is not None:
            buffers = _SCRATCH.buffers
            if buffers.get(self.first) is bases[0] and (self.second is None or buffers.get(self.second) is bases[1]):
                return self.views
        views = self.views = self.make()  # (calls conv.scratch, which creates or grows the buffers)
        buffers = _SCRATCH.buffers
        self.bases = (buffers[self.first], buffers[self.second] if self.second is not None else None)
        return views
