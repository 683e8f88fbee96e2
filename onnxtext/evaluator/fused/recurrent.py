"""Recurrent nodes whose weights are constants, with the weights prepared once (rule ``prepared_recurrent``)."""

from __future__ import annotations


class PreparedRecurrent:
    """Calls an RNN/GRU/LSTM (or com.microsoft::DynamicQuantizeLSTM) kernel with its constant inputs
    filled in and ``prepared=`` the weights in the fast path's layout; the step's inputs are the node's
    other inputs (X, and sequence_lens and initial states when they are not constants), in order."""

    __slots__ = ("kernel", "args", "positions", "attrs")

    def __init__(self, kernel, args, positions, attrs):
        self.kernel = kernel  # the node's own kernel
        self.args = list(args)  # every input of the node: the constants, None elsewhere
        self.positions = tuple(positions)  # where the step's inputs go in args
        self.attrs = attrs  # the node's attributes and ``prepared``

    def __call__(self, *values):
        args = self.args.copy()
        for position, value in zip(self.positions, values):
            args[position] = value
        return self.kernel(*args, **self.attrs)
