"""Rule ``dropout_passthrough``: an inference Dropout whose mask nobody reads passes its input on (its
kernel would build the mask anyway). Level 1.
"""

from __future__ import annotations

from collections import Counter

def inference_dropouts(steps: list, keep: set, known) -> list:
    """Inference Dropouts whose mask nobody reads as pass-throughs."""
    readers = Counter(n for _, used in steps for n in used)
    return [_inference_dropout(s, readers, keep) for s in steps]


def _passthrough(data, *rest, **attrs):
    """An inference Dropout without its mask: the output is the input (what the kernel returns too)."""
    return data


def _inference_dropout(entry, readers, keep):
    """A Dropout step of opset 7 to 11 (inference only), or of 12+ without a ``training_mode`` input,
    whose mask output is absent or read by nothing: :func:`_passthrough`, not the kernel that also
    builds a mask."""
    from ..kernels.normalization import dropout_v7, dropout_v12

    step, used = entry
    fn, ins, outs, attrs, free, info, context = step
    if info.domain or info.node.op_type != "Dropout" or not outs or not outs[0] or \
            any(n and (readers[n] or n in keep) for n in outs[1:]) or \
            not (fn is dropout_v7 or (fn is dropout_v12 and (len(ins) < 3 or not ins[2]))):
        return entry
    return (_passthrough, ins[:1], outs[:1], {}, free, info, False), [ins[0]]


NAME = "dropout_passthrough"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return inference_dropouts(steps, keep, known)
