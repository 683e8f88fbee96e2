"""Signal-processing kernels: DFT, STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix.

Complex values travel as real tensors with a trailing dimension of 2 (real, imaginary); a trailing
dimension of 1 means a real signal. Transforms are computed with numpy's FFT in the input's
precision (float16/bfloat16 in single precision) and cast back to the input's element type.
"""

import numpy as np

from ... import dtypes
from ..registry import kernel


def _to_complex(x: np.ndarray) -> np.ndarray:
    """[..., 1] real or [..., 2] (re, im) tensor -> complex array without the trailing dim.

    Single precision stays single precision (numpy >= 2 transforms complex64 natively): the suite's
    expected values carry float32 rounding, e.g. a 2e-7 imaginary part where the exact value is 0.
    """
    complex_dtype = np.complex128 if x.dtype == np.float64 else np.complex64
    real_dtype = np.float64 if x.dtype == np.float64 else np.float32
    x = x.astype(real_dtype)
    if x.shape[-1] == 1:
        return x[..., 0].astype(complex_dtype)
    return (x[..., 0] + 1j * x[..., 1]).astype(complex_dtype)


def _from_complex(c: np.ndarray, dtype) -> np.ndarray:
    return np.stack([c.real, c.imag], axis=-1).astype(dtype)


def _resize_axis(c: np.ndarray, axis: int, length: int) -> np.ndarray:
    """Truncate or zero-pad ``c`` along ``axis`` to ``length`` (dft_length semantics)."""
    n = c.shape[axis]
    if n > length:
        return np.take(c, np.arange(length), axis=axis)
    if n < length:
        pad = [(0, 0)] * c.ndim
        pad[axis] = (0, length - n)
        return np.pad(c, pad)
    return c


def _dft(x, dft_length, axis: int, inverse: int, onesided: int):
    rank = x.ndim
    if axis < 0:
        axis += rank
    if not 0 <= axis < rank - 1:
        raise ValueError(f"DFT axis {axis} out of range for rank {rank} (the last dim holds re/im)")
    c = _to_complex(x)
    if onesided and inverse:
        # IRFFT: the input holds the non-redundant half spectrum; the output is a real signal.
        n = int(dft_length) if dft_length is not None else 2 * (c.shape[axis] - 1)
        half = _resize_axis(c, axis, n // 2 + 1)
        out = np.fft.irfft(half, n=n, axis=axis)
        return out[..., np.newaxis].astype(x.dtype)
    n = int(dft_length) if dft_length is not None else c.shape[axis]
    c = _resize_axis(c, axis, n)
    out = np.fft.ifft(c, axis=axis) if inverse else np.fft.fft(c, axis=axis)
    if onesided:
        out = np.take(out, np.arange(n // 2 + 1), axis=axis)
    return _from_complex(out, x.dtype)


@kernel("DFT", since=17)
def dft_17(x, dft_length=None, *, axis, inverse, onesided):
    return _dft(x, None if dft_length is None else np.asarray(dft_length).item(), axis, inverse, onesided)


@kernel("DFT", since=20)
def dft_20(x, dft_length=None, axis=None, *, inverse, onesided):
    # Opset 20 moved axis from an attribute (default 1) to an optional input (default -2).
    ax = -2 if axis is None else int(np.asarray(axis).item())
    n = None if dft_length is None or np.asarray(dft_length).size == 0 else np.asarray(dft_length).item()
    return _dft(x, n, ax, inverse, onesided)


@kernel("STFT", since=17)
def stft(signal, frame_step, window=None, frame_length=None, *, onesided):
    c = _to_complex(signal)  # [batch, length]
    step = int(np.asarray(frame_step).item())
    if frame_length is not None:
        n = int(np.asarray(frame_length).item())
    elif window is not None:
        n = window.shape[0]
    else:
        n = c.shape[1]
    if window is not None and window.shape[0] != n:
        raise ValueError(f"STFT window length {window.shape[0]} != frame_length {n}")
    frames = (c.shape[1] - n) // step + 1
    starts = np.arange(frames) * step
    framed = c[:, starts[:, None] + np.arange(n)[None, :]]  # [batch, frames, n]
    if window is not None:
        framed = framed * window.astype(framed.real.dtype)
    spectrum = np.fft.fft(framed, axis=-1)
    if onesided:
        spectrum = spectrum[..., : n // 2 + 1]
    return _from_complex(spectrum, signal.dtype)


def _cosine_window(size, periodic: int, output_datatype: int, coefficients):
    """sum_k (-1)^k a_k cos(2 pi k n / N), N = size (periodic) or size - 1 (symmetric)."""
    size = int(np.asarray(size).item())
    denominator = size if periodic else size - 1
    n = np.arange(size, dtype=np.float64)
    w = np.zeros(size, dtype=np.float64)
    for k, a in enumerate(coefficients):
        w += (-1) ** k * a * np.cos(2 * np.pi * k * n / max(denominator, 1))
    return w.astype(dtypes.np_dtype(output_datatype))


@kernel("HannWindow", since=17)
def hann_window(size, *, periodic, output_datatype):
    return _cosine_window(size, periodic, output_datatype, (0.5, 0.5))


@kernel("HammingWindow", since=17)
def hamming_window(size, *, periodic, output_datatype):
    return _cosine_window(size, periodic, output_datatype, (25 / 46, 21 / 46))


@kernel("BlackmanWindow", since=17)
def blackman_window(size, *, periodic, output_datatype):
    return _cosine_window(size, periodic, output_datatype, (0.42, 0.5, 0.08))


@kernel("MelWeightMatrix", since=17)
def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *,
                      output_datatype):
    mel_bins = int(np.asarray(num_mel_bins).item())
    n_fft = int(np.asarray(dft_length).item())
    rate = float(np.asarray(sample_rate).item())
    low_mel = 2595 * np.log10(1 + float(np.asarray(lower_edge_hertz).item()) / 700)
    high_mel = 2595 * np.log10(1 + float(np.asarray(upper_edge_hertz).item()) / 700)
    # mel_bins + 2 mel points spaced by (high - low) / (mel_bins + 2) as the suite's definition does,
    # mapped back to hertz and then to spectrogram bin indices; filter i is a triangle over the bins
    # (left, centre, right) = points i, i + 1, i + 2.
    mel_points = low_mel + (high_mel - low_mel) / (mel_bins + 2) * np.arange(mel_bins + 2)
    hertz = 700 * (10 ** (mel_points / 2595) - 1)
    bins = np.floor((n_fft + 1) * hertz / rate).astype(np.int64)
    j = np.arange(n_fft // 2 + 1)[:, None]
    left, centre, right = bins[None, :-2], bins[None, 1:-1], bins[None, 2:]
    rise_width, fall_width = centre - left, right - centre
    rise = np.where(rise_width == 0, (j == centre).astype(np.float64),
                    np.where((j >= left) & (j <= centre), (j - left) / np.maximum(rise_width, 1), 0.0))
    # The falling ramp covers [centre, right) and takes precedence on the centre bin.
    on_fall = (j >= centre) & (j < right) & (fall_width > 0)
    weights = np.where(on_fall, (right - j) / np.maximum(fall_width, 1), rise)
    return weights.astype(dtypes.np_dtype(output_datatype))
