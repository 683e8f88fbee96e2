"""Recurrent nodes whose weights are constants, with the weights prepared once (rule ``prepared_recurrent``)."""

from __future__ import annotations


class PreparedRecurrent:
    """Calls an RNN/GRU/LSTM (or com.microsoft::DynamicQuantizeLSTM) kernel with its constant inputs
    filled in and ``prepared=`` the weights in the fast path's layout; the step's inputs are the node's
    other inputs (X, and sequence_lens and initial states when they are not constants), in order.
    ``fast(args)``, when given, runs the fast path from the filled-in input list without the kernel's
    argument handling, or returns None to leave the call to the kernel (sequence_lens given)."""

    __slots__ = ("kernel", "args", "positions", "attrs", "fast")

    def __init__(self, kernel, args, positions, attrs, fast=None):
        self.kernel = kernel  # the node's own kernel
        self.args = list(args)  # every input of the node: the constants, None elsewhere
        self.positions = tuple(positions)  # where the step's inputs go in args
        self.attrs = attrs  # the node's attributes and ``prepared``
        self.fast = fast

    def __call__(self, *values):
        args = self.args.copy()
        for position, value in zip(self.positions, values):
            args[position] = value
        if self.fast is not None:
            out = self.fast(args)
            if out is not None:
                return out
        return self.kernel(*args, **self.attrs)
