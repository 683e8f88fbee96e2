"""Run-time objects of the quantization rules for QDQ and dynamically quantized models:
:class:`FakeQuantize` (rule ``qdq_pair``), :class:`ConvFakeQuantize` (rule ``fake_quantize_into_conv``),
:class:`PooledFakeQuantize` (rule ``max_pool_before_fake_quantize``), :class:`IntegerMatMulToFloat` (rule
``integer_matmul_to_float``), :class:`DynamicQuantizeCodes`, :class:`CodesMatMulToFloat` and
:class:`QuantizedInputMatMul` (rule ``dynamic_quantized_matmul``), :class:`SharedCodesProducts` and
:class:`QuantizedInputSharedProducts` (rule ``shared_codes_products``), :class:`QuantizedMatMulResidual`
(rule ``quantized_residual_add``), :class:`DequantizedGather` (rule ``dequantized_gather``),
:class:`DequantizedMatMul` (rule ``prepared_matmul_nbits``). Each computes exactly the values of the nodes
it replaces, but for :class:`ConvFakeQuantize` (level 2). QOperator models' steps: :mod:`.qoperator`.

A QuantizeLinear whose only reader is a DequantizeLinear with the same per-tensor parameters is
"fake quantization", the way onnxruntime's QDQ quantizer marks a float value as quantized: the pair
is ``clip(rint(x / s), min - zp, max - zp) * s``. Computed in float32 in one buffer, every step but the
last multiply is exact, so the result equals the two nodes' bit for bit (NaN included: both give
``(min - zp) * s``, as the quantizer saturates NaN to the minimum code).
"""

from __future__ import annotations

import numpy as np

from ..kernels.quantize import (dynamic_quantize_linear, dynamic_uint8_codes, round_float32, saturate_float32,
                                shifted_codes)

_F32 = np.dtype(np.float32)
_ZERO = np.float32(0)  # (added to codes: -0.0 becomes +0.0; made once, a numpy scalar costs ~0.4 us)
_min_all = np.minimum.reduce


class FakeQuantize:
    """``DequantizeLinear(QuantizeLinear(x, s, zp), s, zp)`` for float32 ``x``; ``fallback(x)`` (the
    two original steps) for other inputs."""

    __slots__ = ("scale", "low", "high", "fallback")

    def __init__(self, scale: np.float32, zero_point: float, target: np.dtype, fallback):
        info = np.iinfo(target)
        self.scale = np.float32(scale)
        self.low, self.high = np.float32(info.min - zero_point), np.float32(info.max - zero_point)
        self.fallback = fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != _F32:
            return self.fallback(x)
        q = shifted_codes(x, self.scale, self.low, self.high)  # (NaN becomes the minimum code, as QuantizeLinear's)
        q += _ZERO  # -0.0 (rint of a small negative ratio) is the code's +0.0, as q - zp is
        q *= self.scale
        return q


class ConvFakeQuantize(FakeQuantize):
    """A :class:`FakeQuantize` whose neighbouring convolutions took its scale into their weights (rule
    ``fake_quantize_into_conv``, level 2): without ``divide`` its input is already ``x / s`` (the producing
    conv's weights and bias were divided by ``s``); without ``multiply`` its result is the codes ``c``, not
    ``c * s`` (the reading convs' weights were multiplied by ``s``). Other inputs than float32 are
    converted to float32. Without ``divide`` the input is the fresh result of a conv that nothing else
    reads (the rule's condition), so it is rounded and saturated in place (one array fewer per conv
    to allocate and write to); a read-only result (the general conv's views) is copied."""

    __slots__ = ("divide", "multiply")

    def __init__(self, fake: FakeQuantize, divide: bool, multiply: bool):
        self.scale, self.low, self.high, self.fallback = fake.scale, fake.low, fake.high, fake.fallback
        self.divide, self.multiply = divide, multiply

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != _F32:
            x = np.asarray(x, _F32)
        if self.divide:
            q = shifted_codes(x, self.scale, self.low, self.high)
        else:
            q = saturate_float32(np.rint(x, out=x) if x.flags.writeable else np.rint(x), self.low, self.high)
        if self.multiply:
            q += _ZERO
            q *= self.scale
        return q


class PooledFakeQuantize:
    """``MaxPool(FakeQuantize(x))`` as ``FakeQuantize(MaxPool(x))`` (rule ``max_pool_before_fake_quantize``):
    the fake quantization (a :class:`FakeQuantize` or :class:`ConvFakeQuantize` with a scale > 0) never
    decreases, so the largest fake-quantized value of a window is the fake-quantized largest value, and
    a 2x2 pool quantizes a quarter of the values. NaN is where the orders differ (the pair makes it the
    lowest code, which a window's other values then exceed; MaxPool propagates it): a pooled NaN (one
    reduction over the pooled values) runs ``fallback``, the original steps, as do inputs other than
    float32. The rule only pools windows that hold at least one input value (no window wholly in
    padding, whose -inf the pair would turn into the lowest code)."""

    __slots__ = ("pool", "quantize", "fallback")

    def __init__(self, pool, quantize: FakeQuantize, fallback):
        self.pool, self.quantize, self.fallback = pool, quantize, fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype != _F32:
            return self.fallback(x)
        pooled = self.pool(x)
        if pooled.size:
            low = _min_all(pooled, axis=None)
            if low != low:  # (NaN)
                return self.fallback(x)
        return self.quantize(pooled)


_EIGHT_BITS = (np.dtype(np.uint8), np.dtype(np.int8))


class IntegerMatMulToFloat:
    """``MatMulInteger(a, W, a_zp, W_zp) -> Cast(float) -> Mul(scale) (-> Add(bias))`` with constant
    ``W`` (rule ``integer_matmul_to_float``), what onnxruntime's dynamic quantizer writes for every
    MatMul. ``W - W_zp`` is converted to float32 once; ``a - a_zp`` (8-bit values: magnitude at most 255)
    times it is exact in float32, as the rule checked (``K * 255 * max|W - W_zp| < 2**24``), so the
    product equals the int32 result converted to float32; the scale and the bias are then applied in
    place, as the Mul and Add steps would. ``scale_factor``: the constant the pattern's scale product
    multiplies ``scale`` by (None: ``scale`` is the factor itself)."""

    __slots__ = ("w", "scale_factor", "bias", "fallback")

    def __init__(self, w_shifted, scale_factor, bias, fallback):
        self.w, self.scale_factor, self.bias, self.fallback = w_shifted, scale_factor, bias, fallback

    def __call__(self, a, a_zero_point, scale):
        if type(a) is not np.ndarray or a.dtype not in _EIGHT_BITS or a.ndim < 1 or \
                (a_zero_point is not None and (type(a_zero_point) is not np.ndarray or a_zero_point.size != 1 or
                                               a_zero_point.dtype != a.dtype)) or \
                type(scale) is not np.ndarray or scale.dtype != _F32:
            return self.fallback(a, a_zero_point, scale)
        a32 = a.astype(_F32)
        if a_zero_point is not None:
            zp = a_zero_point.reshape(-1)[0]
            if zp:
                a32 -= _F32.type(zp)
        y = np.matmul(a32, self.w)
        factor = scale if self.scale_factor is None else np.multiply(scale, self.scale_factor)
        if factor.dtype != _F32 or factor.ndim > y.ndim or (factor.size != 1 and factor.shape != y.shape[-1:]):
            return self.fallback(a, a_zero_point, scale)  # (a factor that would broadcast y to a larger shape)
        y *= factor
        if self.bias is not None:
            y += self.bias
        return y


class DynamicQuantizeCodes:
    """``DynamicQuantizeLinear(x)`` read only by :class:`CodesMatMulToFloat` steps (rule
    ``dynamic_quantized_matmul``): ``(codes - zero point as float32, scale)``, the values the
    products read; the uint8 tensor and its zero point are never made (three numpy passes fewer for
    the quantization and two per product)."""

    __slots__ = ()

    def __call__(self, x):
        if type(x) is np.ndarray and x.dtype == _F32:
            fast = dynamic_uint8_codes(x)
            if fast is not None:
                return fast[0], np.asarray(fast[1], _F32)
        # (NaN, infinities, all zeros, a scale that underflows to 0: the kernel's rules for them)
        q, scale, zero_point = dynamic_quantize_linear(x)
        codes = q.astype(_F32)
        codes -= zero_point.astype(_F32)
        return codes, scale

    def __repr__(self):
        return "DynamicQuantizeCodes()"


class CodesMatMulToFloat:
    """An :class:`IntegerMatMulToFloat` reading :class:`DynamicQuantizeCodes`' shifted codes (float32
    integers of magnitude at most 255, the values it would have made from the uint8 tensor and its
    zero point) and scale: one product, then the scale and the bias in place. A one-element scale
    times a one-element constant factor is multiplied in Python floats and rounded once to float32:
    the product of two float32 values is exact in float64, so this is the Mul node's float32 product
    (without two numpy scalar operations)."""

    __slots__ = ("w", "scale_factor", "bias", "factor_value", "direct")

    def __init__(self, product: IntegerMatMulToFloat):
        self.w, self.scale_factor, self.bias = product.w, product.scale_factor, product.bias
        f = self.scale_factor
        self.factor_value = float(f) if f is not None and f.ndim == 0 and f.dtype == _F32 else None
        # (whether :meth:`scaled` applies: no factor, or a one-element float32 one)
        self.direct = f is None or self.factor_value is not None

    def scaled(self, y: np.ndarray, scale: float) -> np.ndarray:
        """``y`` (the float32 product) times a Python-float scale (a float32 value) and the constant
        factor, plus the bias, for a product with :attr:`direct`: the same float32 operations as
        :meth:`__call__` (a Python float operand is a float32 one in numpy's arithmetic)."""
        y *= scale if self.factor_value is None else round_float32(scale * self.factor_value)
        if self.bias is not None:
            y = y + self.bias if self.bias.ndim > y.ndim else np.add(y, self.bias, out=y)
        return y

    def __call__(self, codes, scale):
        y = np.matmul(codes, self.w)
        if self.factor_value is not None and type(scale) is np.ndarray and scale.ndim == 0 and scale.dtype == _F32:
            y *= round_float32(float(scale) * self.factor_value)
        else:
            factor = scale if self.scale_factor is None else np.multiply(scale, self.scale_factor)
            if factor.ndim > y.ndim or (factor.size != 1 and factor.shape != y.shape[-1:]):
                y = y * factor  # (a factor that broadcasts y to a larger shape, as the Mul node does)
            else:
                y *= factor
        if self.bias is not None:
            y = y + self.bias if self.bias.ndim > y.ndim else np.add(y, self.bias, out=y)
        return y


class SharedCodesProducts:
    """Several :class:`CodesMatMulToFloat` steps reading the same codes and scale (the query, key and
    value projections after onnxruntime's dynamic quantizer) as ONE product with the weights side by
    side (rule ``shared_codes_products``), each result a view of its columns. The same values as the
    separate steps: the codes times each weight column are exact integer sums in float32 whatever the
    width of the product (the condition of rule ``integer_matmul_to_float``, unchanged by adding
    columns); ``factors`` holds each column's constant factor (1 for a product scaled by the scale
    itself), and ``factors * scale`` is the float32 product the separate steps compute per column
    (correctly rounded either way); the biases are concatenated. ``fallback`` (the original steps) for
    a scale that is not a float32 scalar or codes that are not float32."""

    __slots__ = ("w", "factors", "bias", "bounds", "fallback")

    def __init__(self, w, factors, bias, bounds, fallback):
        self.w, self.factors, self.bias, self.bounds, self.fallback = w, factors, bias, bounds, fallback

    def __call__(self, codes, scale):
        if type(codes) is not np.ndarray or codes.dtype != _F32 or codes.ndim < 1 or \
                type(scale) is not np.ndarray or scale.dtype != _F32 or scale.ndim:
            return self.fallback(codes, scale)
        y = np.matmul(codes, self.w)
        y *= np.multiply(self.factors, scale)
        if self.bias is not None:
            y += self.bias
        return tuple(y[..., start:stop] for start, stop in self.bounds)


class QuantizedInputSharedProducts:
    """A :class:`DynamicQuantizeCodes` whose codes and scale only one :class:`SharedCodesProducts` reads
    (rule ``shared_codes_products``: the Q/K/V projections of a layer's input), as one step ``x -> (y1,
    y2, ...)``: the same computations without a step between them, the scale kept a Python float."""

    __slots__ = ("quantize", "products")

    def __init__(self, quantize: DynamicQuantizeCodes, products: SharedCodesProducts):
        self.quantize, self.products = quantize, products

    def __call__(self, x):
        if type(x) is np.ndarray and x.dtype == _F32 and x.ndim:
            fast = dynamic_uint8_codes(x)
            if fast is not None:
                p = self.products
                y = np.matmul(fast[0], p.w)
                y *= np.multiply(p.factors, fast[1])  # (a Python float operand is a float32 one)
                if p.bias is not None:
                    y += p.bias
                return tuple(y[..., start:stop] for start, stop in p.bounds)
        codes, scale = self.quantize(x)
        return self.products(codes, scale)


class QuantizedInputMatMul:
    """A :class:`DynamicQuantizeCodes` whose codes and scale only one :class:`CodesMatMulToFloat` reads
    (rule ``dynamic_quantized_matmul``: a classifier's head after onnxruntime's dynamic quantizer), as
    one step ``x -> y``: the same two computations without a step between them."""

    __slots__ = ("quantize", "product")

    def __init__(self, quantize: DynamicQuantizeCodes, product: CodesMatMulToFloat):
        self.quantize, self.product = quantize, product

    def __call__(self, x):
        product = self.product
        if type(x) is np.ndarray and x.dtype == _F32 and product.direct:
            fast = dynamic_uint8_codes(x)  # (the scale as a Python float: no 0-d array made and read back)
            if fast is not None:
                return product.scaled(np.matmul(fast[0], product.w), fast[1])
        codes, scale = self.quantize(x)
        return product(codes, scale)


class QuantizedMatMulResidual:
    """``Add(QuantizedInputMatMul(x), r)`` (rule ``quantized_residual_add``: the attention output and
    the second feed-forward product of a dynamically quantized transformer layer, added to the
    residual stream): ``r`` added in place into the product's new result, one array and one step
    instead of two each; ``p + r`` equals ``r + p``. ``fallback`` (the original steps) when ``r`` is not
    a float32 array of the product's shape (an Add that broadcasts or converts)."""

    __slots__ = ("product", "fallback")

    def __init__(self, product: QuantizedInputMatMul, fallback):
        self.product, self.fallback = product, fallback

    def __call__(self, x, r):
        y = self.product(x)
        if type(r) is np.ndarray and r.dtype == _F32 and r.shape == y.shape and y.dtype == _F32:
            y += r
            return y
        return self.fallback(x, r)


class DequantizedMatMul:
    """MatMulNBits with constant weights (rule ``prepared_matmul_nbits``): ``a @ w (+ bias)`` for float32
    ``a``, ``w`` the weights dequantized once (float32, K x N), the bias added in place, as the kernel
    computes it; ``fallback(a)`` (the kernel) for other inputs (float16 activations)."""

    __slots__ = ("w", "bias", "fallback")

    def __init__(self, w, bias, fallback):
        self.w, self.bias, self.fallback = w, bias, fallback

    def __call__(self, a):
        if type(a) is not np.ndarray or a.dtype != _F32 or a.ndim < 1:
            return self.fallback(a)
        y = np.matmul(a, self.w)
        if self.bias is not None:
            y += self.bias
        return y


class DequantizedGather:
    """``DequantizeLinear(Gather(table, ids, axis), scale, zero_point)`` with per-tensor parameters (rule
    ``dequantized_gather``): without ``lookup``, ``table`` is the quantized table dequantized once and a
    run is one ``take``; with it, ``table`` holds the codes and ``lookup`` the dequantized value of every
    code (indexed by the code itself, negative codes from the end), a run is two ``take`` calls. The same
    values as the two nodes, out-of-range ids refused as Gather refuses them; ``fallback`` (the original
    steps) for ids that are not an integer array."""

    __slots__ = ("table", "axis", "lookup", "fallback")

    def __init__(self, table: np.ndarray, axis: int, lookup, fallback):
        self.table, self.axis, self.lookup, self.fallback = table, axis, lookup, fallback

    def __call__(self, ids):
        if type(ids) is not np.ndarray or ids.dtype.kind not in "iu":
            return self.fallback(ids)
        rows = self.table.take(ids, axis=self.axis)
        if self.lookup is None:
            return rows
        return self.lookup.take(rows)
