"""The generator: small random Triton kernels, as source text.

`generate(draw, cid)` builds one *case*: the body of a kernel (lines of Triton source), the
buffers and scalar arguments it takes, and how each output is to be compared. Everything it
chooses comes from `draw` (`RandomDraw(seed)` for the seeded GPU runs, `HypothesisDraw(data)`
under hypothesis, which can then shrink a failing case), so a seed names a case.

Cases of several kinds (CATEGORIES): element-wise expressions over every dtype (integer
wrap-around, fp16/bf16 rounding, fp32 contraction into fma), casts, masked loads with `other`,
transcendental functions, reductions, scans, `tl.dot` and `tl.rand`. Each case's result type is
predicted from the fuzzer's own promotion rules (types.py) and checked in the kernel with
`tl.static_assert`, so a promotion that differs is a compile error on the side that differs.

Body lines use `@` for the case's name prefix (run.py makes it `c3_`), so that many cases can
share one kernel: real Triton compiles a kernel in ~0.1-0.3 s, and one kernel per case would
cost more than everything else together.
"""
from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field

from .types import (B1, BF16, BOOL, F16, F32, F64, FLOAT, FLOATS, I8, I32, I64, INT, INTS, U32,
                    U64, bitcast_partners, computation_type, int_range, literal_fits,
                    literal_type)

PROGRAMS = 2  # every launch has grid (2,): each case's buffers hold one block per program

# How often each kind of case is drawn (run.py's summary reports them separately).
CATEGORIES = {"int": 14, "float": 16, "cast": 10, "mask": 8, "math": 14, "reduce": 12,
              "scan": 8, "dot": 12, "rand": 4, "randn": 2}

# The approximate functions of the `math` category (the GPU's are not correctly rounded).
# `tl.fdiv(..., ieee_rounding=True)` too: Triton 3.6 ignores the flag (semantic.fdiv), so it is
# div.full.f32 like `/`.
APPROX = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "sigmoid", "div",
          "fdiv", "fdiv_ieee")
DOT_KINDS = ("tf32", "ieee", "tf32x3", "bf16", "fp16", "fp16acc", "int8", "fp64")


# ----------------------------------------------------------------------------- draws

class RandomDraw:
    """Choices from a seeded `random.Random`: a seed reproduces its case on any machine."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def float(self):
        return self.r.random()


class HypothesisDraw:
    """Choices from hypothesis' `data`: a failing case shrinks toward earlier options."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self.data, self.st = data, st

    def int(self, lo, hi):
        return self.data.draw(self.st.integers(lo, hi))

    def float(self):
        return self.int(0, 9999) / 10000


def choice(draw, seq):
    return seq[draw.int(0, len(seq) - 1)]


def weighted(draw, table):
    """A key of `table` ({key: weight}), drawn in proportion to its weight."""
    keys = [k for k, w in table.items() if w > 0]
    total = sum(table[k] for k in keys)
    x = draw.float() * total
    for k in keys:
        x -= table[k]
        if x < 0:
            return k
    return keys[-1]


def chance(draw, p):
    return draw.float() < p


# ----------------------------------------------------------------------------- case data

@dataclass
class Input:
    name: str              # parameter name without the case prefix: x0, s1
    ty: str                # logical type (buffers hold `Ty.container`)
    size: int = 0          # elements, all programs together (0: a scalar argument)
    mode: str = "normal"   # how data.py fills it
    seed: int = 0
    value: object = None   # a scalar argument's value


@dataclass
class Output:
    name: str
    ty: str
    size: int
    check: dict            # how run.py compares it (compare.py)


@dataclass
class Case:
    cid: int
    category: str
    ops: list
    inputs: list
    outputs: list
    lines: list            # kernel body, `@` standing for the case prefix
    ref: object = field(default=None, repr=False, compare=False)  # Node tree (int cases)

    @property
    def params(self):
        return [i.name for i in self.inputs] + [o.name for o in self.outputs]

    def to_json(self):
        d = asdict(self)
        d.pop("ref")
        return d

    @classmethod
    def from_json(cls, d):
        return cls(d["cid"], d["category"], list(d["ops"]), [Input(**i) for i in d["inputs"]],
                   [Output(**o) for o in d["outputs"]], list(d["lines"]))

    def source(self, prefix="@"):
        return "\n".join(line.replace("@", prefix) for line in self.lines)


# ----------------------------------------------------------------------------- expressions

class Node:
    """A typed expression: its source, type, block shape and, for the NumPy reference
    (reference.py), the operation and operands it was built from."""

    __slots__ = ("src", "ty", "shape", "lit", "value", "op", "kids", "arg", "approx")

    def __init__(self, src, ty, shape, op, kids=(), arg=None, lit=False, value=None):
        self.src, self.ty, self.shape, self.op = src, ty, tuple(shape), op
        self.kids, self.arg, self.lit, self.value = tuple(kids), arg, lit, value
        self.approx = any(k.approx for k in kids)


def _tiny(v):
    """A float literal that Triton's bf16 constants lose: it prints them with std::to_string
    (six decimals) before parsing."""
    return isinstance(v, float) and 0 < abs(v) < 5e-7


def _is_product(x):
    return x.op == "*" or (x.op == "neg" and x.kids[0].op == "*")


def _constant(x):
    """Whether Triton's compiler folds `x` into a constant: literals, `tl.full` blocks and the
    arithmetic of them (MLIR's arith folders, with APFloat)."""
    if x.op in ("lit", "full"):
        return True
    return x.op in ("+", "-", "*", "/", "%", "neg", "cast") and all(_constant(k) for k in x.kids)


def broadcast(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        assert len(sizes) <= 1, shapes
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def render_literal(v):
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return 'float("nan")'
        if v in (float("inf"), float("-inf")):
            return 'float("inf")' if v > 0 else '(-float("inf"))'
        s = repr(v)
        return f"({s})" if s.startswith("-") else s
    return f"({v})" if v < 0 else str(v)


INT_LITERALS = [0, 1, 2, 3, 5, 7, 16, 100, 127, 255, 1000, 65535, 2**31 - 1, -1, -2, -7, -100,
                -128, -2**31, 2**31, 2**40, -2**40]
FLOAT_LITERALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -1.5, 0.1, 1e-3, 100.0, 1e10, 65504.0,
                  1e-40, -0.75, 0.3333333333333333, 6.1e-5]
BIN_FLOAT = {"+": 5, "-": 4, "*": 5, "%": 0.6, "/": 1.0}  # "/" only where it stays exact (fp64)
BIN_INT = {"+": 3, "-": 3, "*": 3, "//": 1.5, "%": 1.5, "&": 1.2, "|": 1.2, "^": 1.2, "<<": 1,
           ">>": 1}
CMP = ("<", "<=", ">", ">=", "==", "!=")

BF16_TO_F32 = {BF16: F32}

# Float -> int casts are undefined out of range on the GPU: the value is clamped first, to a
# power of two that every float type holds exactly and the target type contains.
CAST_LIMIT = {"int8": 64, "int16": 2**14, "int32": 2**30, "int64": 2**62, "uint8": 128,
              "uint16": 2**15, "uint32": 2**31, "uint64": 2**63}


class Avoided(Exception):
    """The case needs a construct the caller asked to avoid (known.py): draw another."""


class Tags(set):
    """The constructs a case uses; adding one of `avoid` abandons the case."""

    def __init__(self, avoid):
        super().__init__()
        self.avoid = avoid

    def add(self, tag):
        if tag in self.avoid:
            raise Avoided(tag)
        super().add(tag)

    def update(self, tags):
        for t in tags:
            self.add(t)


class Builder:
    """Builds one case: declares its buffers, emits its lines, makes its nodes."""

    def __init__(self, draw, cid, category, avoid=frozenset()):
        self.d, self.cid, self.category = draw, cid, category
        self.inputs, self.outputs, self.lines = [], [], []
        self.ops = Tags(avoid)
        self.nvar = 0
        self.undefined = []   # masks of loads without `other`: those lanes are undefined
        self.index = {}
        # reductions, scans and dots read every lane: their masked loads always have `other`
        self.need_other = category in ("reduce", "scan")
        self.products = set()  # float products written so far, as (operand, operand) sources

    # --- declarations
    def data_seed(self):
        return self.d.int(0, 2**31 - 1)

    def buffer(self, ty, size, mode):
        name = f"x{len(self.inputs)}"
        self.inputs.append(Input(name, ty.name, size, mode, self.data_seed()))
        return name

    def scalar_arg(self, ty):
        name = f"s{len(self.inputs)}"
        d = self.d
        if ty == F32:
            value = float(choice(d, [0.5, -3.25, 1e-3, 7.0, 1e4, 0.1])
                          * (1 + d.int(0, 1000) / 997))
        elif ty == I64:
            value = choice(d, [2**31 + 5, 2**40 + 3, -2**35 - 1, 2**62 + 17])
        else:  # int32; never 1, which Triton specializes into a constant
            value = choice(d, [0, 2, 3, 7, 16, 100, -5, 12345, 2**31 - 1, -2**31])
        self.inputs.append(Input(name, ty.name, 0, "scalar", 0, value))
        return name

    def output(self, ty, size, check):
        name = f"y{len(self.outputs)}"
        self.outputs.append(Output(name, ty.name, size, check))
        return name

    def var(self, src, ty, shape, op="var", kids=(), arg=None):
        """Assign `src` to a fresh variable; the node keeps `op`/`kids` for the reference."""
        name = f"@v{self.nvar}"
        self.nvar += 1
        self.lines.append(f"    {name} = {src}")
        return Node(name, ty, shape, op, kids, arg)

    # --- index space
    def setup_1d(self, block):
        self.shape = (block,)
        self.lines.append(f"    @o = pid * {block} + tl.arange(0, {block})")
        self.index = {"o": Node("@o", I32, (block,), "index", arg="o")}

    def setup_2d(self, m, n):
        self.shape = (m, n)
        self.lines += [f"    @r = tl.arange(0, {m})[:, None]", f"    @c = tl.arange(0, {n})[None, :]",
                       f"    @o = pid * {m * n} + @r * {n} + @c"]
        self.index = {"o": Node("@o", I32, (m, n), "index", arg="o"),
                      "r": Node("@r", I32, (m, 1), "index", arg="r"),
                      "c": Node("@c", I32, (1, n), "index", arg="c")}

    def size_of(self, where):
        m = self.shape[0]
        n = self.shape[-1]
        return PROGRAMS * {"full": math.prod(self.shape), "row": n, "col": m}[where]

    # --- leaves
    def literal(self, value):
        if isinstance(value, float) and value == 0 and math.copysign(1, value) < 0:
            self.ops.add("neg_zero_literal")  # Triton makes a literal -0.0 +0.0
        return Node(render_literal(value), literal_type(value), (), "lit", lit=True, value=value)

    def load(self, ty, where="full", mode=None, mask="maybe", other="maybe"):
        """A load of a fresh buffer of logical type `ty`."""
        d = self.d
        if mode is None:
            mode = self.data_mode(ty)
        size = self.size_of(where)
        buf = self.buffer(ty, size, mode)
        off = {"full": "@o", "row": f"pid * {self.shape[-1]} + @c",
               "col": f"pid * {self.shape[0]} + @r"}[where]
        shape = {"full": self.shape, "row": (1, self.shape[-1]), "col": (self.shape[0], 1)}[where]
        m = None
        if mask == "always" or (mask == "maybe" and chance(d, self.mask_rate())):
            m = self.mask_node(where)
        args = f"@{buf} + {off}"
        other_value = None
        if m is not None:
            self.ops.add("mask")
            args += f", mask={m.src}"
            if other == "always" or self.need_other or (other == "maybe" and chance(d, 0.6)):
                other_value = self.other_value(ty)
                if isinstance(other_value, float) and other_value == 0 and \
                        math.copysign(1, other_value) < 0:
                    self.ops.add("neg_zero_literal")
                args += f", other={render_literal(other_value)}"
                self.ops.add("other")
            else:
                self.undefined.append(m)
        src = f"tl.load({args})"
        if ty.kind == BOOL:
            src = f"({src} != 0)"
        elif ty.unsigned:
            src = f"{src}.to({ty.tl}, bitcast=True)"
        return self.var(src, ty, shape, "load", (m,) if m is not None else (),
                        arg=(buf, where, other_value))

    def mask_rate(self):
        return 0.7 if self.category == "mask" else 0.15

    def other_value(self, ty):
        d = self.d
        if ty.kind == BOOL:
            return choice(d, [0, 1])
        if ty.kind == FLOAT:
            return choice(d, [0.0, -0.0, 1.5, -2.0, float("inf"), float("-inf"), float("nan"), 3])
        lo, hi = int_range(ty.container)
        vals = [0, 1, 7, -1, -100, 100, lo, hi]
        if chance(d, 0.15):
            return choice(d, [1.5, -2.75])  # a float `other` for an int pointer: truncated
        return choice(d, [v for v in vals if lo <= v <= hi])

    def mask_node(self, where):
        """A boolean mask over the case's index space (over one axis for row/column loads)."""
        d, ix = self.d, self.index
        total = PROGRAMS * math.prod(self.shape)
        if where == "row" or (where == "full" and len(self.shape) == 2 and chance(d, 0.3)):
            return self.binop("<", ix["c"], self.literal(d.int(0, self.shape[1])))
        if where == "col" or (where == "full" and len(self.shape) == 2 and chance(d, 0.3)):
            return self.binop(">=" if chance(d, 0.3) else "<", ix["r"],
                              self.literal(d.int(0, self.shape[0])))
        kind = d.int(0, 4)
        o = ix["o"]
        if kind == 0:
            return self.binop("<", o, self.literal(d.int(0, total)))
        if kind == 1:
            k = d.int(2, 5)
            return self.binop("!=", self.binop("%", o, self.literal(k)),
                              self.literal(d.int(0, k - 1)))
        if kind == 2:
            return self.binop("==", self.binop("&", o, self.literal(1)), self.literal(0))
        if kind == 3:
            n = self.scalar_arg(I32)
            node = Node(f"@{n}", I32, (), "scalar", arg=n)
            return self.binop("<", o, node)
        return self.binop(">=", o, self.literal(d.int(0, total)))

    def data_mode(self, ty):
        d = self.d
        if ty.kind == BOOL:
            return "bits"
        if ty.kind == INT:
            return weighted(d, {"full": 3, "small": 3, "edge": 2})
        if self.category == "math":
            return weighted(d, {"normal": 2, "wide": 2, "special": 1, "pos": 2})
        return weighted(d, {"normal": 4, "ints": 1, "special": 2, "wide": 2})

    def leaf(self, fam):
        """A load (mostly), a scalar argument, a constant block or the index."""
        d = self.d
        kind = weighted(d, {"load": 8, "scalar": 1, "full": 1, "index": 1 if fam == "int" else 0})
        if kind == "index":
            return self.index["o"]
        ty = self.leaf_type(fam)
        if kind == "scalar" and ty in (I32, I64, F32):
            n = self.scalar_arg(ty)
            return Node(f"@{n}", ty, (), "scalar", arg=n)
        if kind == "full" and ty.kind != BOOL:
            value = self.full_value(ty)
            if isinstance(value, float) and value == 0 and math.copysign(1, value) < 0:
                self.ops.add("neg_zero_literal")
            src = f"tl.full({list(self.shape)}, {render_literal(value)}, {ty.tl})"
            self.ops.add("full")
            return self.var(src, ty, self.shape, "full", arg=value)
        where = "full"
        if len(self.shape) == 2:
            where = weighted(d, {"full": 3, "row": 1, "col": 1})
        return self.load(ty, where)

    def leaf_type(self, fam):
        d = self.d
        if fam == "int":
            return choice(d, INTS + INTS[2:3] + [B1])
        if fam == "float":
            return choice(d, FLOATS + [F32, F16, BF16]) if chance(d, 0.88) else choice(d, INTS)
        return choice(d, FLOATS + INTS + [B1])

    def full_value(self, ty):
        d = self.d
        if ty.kind == FLOAT:
            return choice(d, [0.1, -2.5, 1e-3, 3.0, 1e5, -0.0, 0.3333333333333333])
        lo, hi = int_range(ty)
        return choice(d, [v for v in (0, 3, -7, 100, lo, hi, hi // 3) if lo <= v <= hi])

    def may_be_subnormal(self, x):
        """Whether fp32 `x` can hold subnormals: data with them, or a product."""
        return "*" in x.src or any(i.mode in ("special", "wide") for i in self.inputs)

    def few_bits(self, x):
        """An operand whose values have few significant bits (an integer converted, integer
        data): its products land on ties of the fp32 rounding often."""
        if x.ty.kind != FLOAT:
            return True
        if x.op == "cast" and x.kids[0].ty.kind != FLOAT:
            return True
        if x.op == "load":
            return any(i.name == x.arg[0] and i.mode == "ints" for i in self.inputs)
        return False

    # --- operations (None where the operands do not suit the operation)
    def binop(self, op, a, b):
        """`a op b` with Triton's typing; None when Triton would refuse it."""
        div = op in ("/", "//", "%")
        if op in CMP:
            # Triton's comparisons make a literal a tensor of its own type first (core.py
            # `__lt__`: `to_tensor(other)`): `bf16 < 1e-40` compares in fp64, `int8 < 1000` in
            # int32, `uint32 < -1` in uint32 (-1 cast)
            ct = computation_type(a.ty, False, b.ty, False)
        else:
            ct = computation_type(a.ty, a.lit, b.ty, b.lit, div)
        if ct is None:
            return None
        for x in (a, b):
            if op in CMP:
                break
            if x.lit and not literal_fits(x.value, ct):
                return None
            if x.lit and ct.unsigned and x.value < 0:
                return None
        if op in ("&", "|", "^") and ct.kind == FLOAT:
            return None
        if op in ("<<", ">>", "//") and ct.kind != INT:
            return None
        if op in ("+", "-", "*", "%", "/") and ct.kind == BOOL:
            return None
        ty = B1 if op in CMP else ct
        if op == "/" and ct.kind != FLOAT:
            ty = F32
        shape = broadcast(a.shape, b.shape)
        if ct.kind == FLOAT:  # finer tags, to tell which construct a mismatch needs
            self.ops.add(f"{op}:{ct.name}")
            if op in ("+", "-") and all(_is_product(x) for x in (a, b)):
                self.ops.add("contract2")
            elif op in ("+", "-") and any(_is_product(x) for x in (a, b)):
                self.ops.add(f"contract:{ct.name}")
                prod = a if _is_product(a) else b
                prod = prod.kids[0] if prod.op == "neg" else prod
                if ct == F32 and any(self.few_bits(k) for k in prod.kids):
                    self.ops.add("fma32_tie")
            for x in (a, b):
                if x.lit and ct == BF16 and _tiny(x.value):
                    self.ops.add("bf16_literal")
            if op == "*":
                # the same product written twice is one value with two uses after CSE, and LLVM
                # fuses a product by its uses, all of them, later ones too
                key = tuple(sorted((a.src, b.src)))
                if key in self.products:
                    self.ops.add("shared_product")
                self.products.add(key)
            if op == "%":
                self.ops.add("float_mod")
            # folded by the compiler: `%` of constants with APFloat's mod (C's fmod), and a
            # product of constants rounded before the add it would otherwise be fused into
            if (op == "%" and _constant(a) and _constant(b)) or (op in ("+", "-") and any(
                    _is_product(x) and _constant(x) for x in (a, b))):
                self.ops.add("const_fold")
        if op == ">>" and a.ty.signed and a.ty.kind == INT and ct.unsigned:
            self.ops.add("rshift_signed_lhs")
            for x in (a, b):
                if x.lit and ct.bits < 32 and isinstance(x.value, float):
                    self.ops.add(f"literal:{ct.name}")
        return Node(f"({a.src} {op} {b.src})", ty, shape, op, (a, b), arg=ct)

    def call(self, fn, args, ty, op, kids, shape=None, arg=None):
        shape = broadcast(*[k.shape for k in kids]) if shape is None else shape
        return Node(f"{fn}({', '.join(args)})", ty, shape, op, kids, arg)

    def cast(self, x, ty, bitcast=False, rtz=False):
        if x.ty == ty:
            return x
        extra = ", bitcast=True" if bitcast else ""
        if rtz:
            extra = ', fp_downcast_rounding="rtz"'
        self.ops.add(f"{'bitcast' if bitcast else 'cast'}:{x.ty.name}->{ty.name}")
        src = f"{x.src}.to({ty.tl}{extra})"
        return Node(src, ty, x.shape, "bitcast" if bitcast else "cast", (x,), arg=rtz)

    def safe_cast(self, x, ty):
        """x.to(ty), clamping first where a float -> int conversion could be out of range."""
        if x.ty.kind == FLOAT and ty.kind == INT:
            lim = CAST_LIMIT[ty.name]
            lo = -float(lim) if ty.signed else 0.0
            hi = float(min(lim, 32768)) if x.ty == F16 else float(lim)
            x = self.minmax("maximum", x, self.literal(lo))
            x = self.minmax("minimum", x, self.literal(hi))
            self.ops.add("float->int")
        return self.cast(x, ty)

    def minmax(self, fn, a, b, nan=False):
        """tl.maximum/minimum: unlike the operators, Triton makes a literal operand a tensor of
        its own type first (fp32, int32...) and widens bf16 to fp32 (core.py)."""
        ta, tb = (BF16_TO_F32.get(x.ty, x.ty) for x in (a, b))
        ct = computation_type(ta, False, tb, False)
        if ct is None or ct.kind == BOOL:
            return None
        if a.lit or b.lit or BF16 in (a.ty, b.ty):
            self.ops.add("minmax_promotes")
        args = [a.src, b.src] + (["propagate_nan=tl.PropagateNan.ALL"] if nan else [])
        self.ops.add(f"{fn}:{ct.name}")
        return self.call(f"tl.{fn}", args, ct, fn, (a, b), arg=nan)

    def where(self, c, a, b):
        ct = computation_type(a.ty, a.lit, b.ty, b.lit)
        if ct is None:
            return None
        for x in (a, b):
            if x.lit and (not literal_fits(x.value, ct) or (ct.unsigned and x.value < 0)):
                return None
        if ct == BF16 and any(x.lit and _tiny(x.value) for x in (a, b)):
            self.ops.add("bf16_literal")
        return self.call("tl.where", [c.src, a.src, b.src], ct, "where", (c, a, b), arg=ct)

    def operand_literal(self, ty):
        """A literal to pair with a tensor of type `ty` (mostly one that keeps its type)."""
        d = self.d
        if ty.kind == FLOAT or chance(d, 0.1):
            if ty.kind != FLOAT and chance(d, 0.5):
                return self.literal(choice(d, [0.5, -1.5, 3.0]))  # promotes to fp32
            if ty.kind == FLOAT and chance(d, 0.2):
                return self.literal(choice(d, [2, -3, 7, 100000]))
            return self.literal(choice(d, FLOAT_LITERALS))
        vals = [v for v in INT_LITERALS if literal_fits(v, ty) and not (ty.unsigned and v < 0)]
        return self.literal(choice(d, vals))

    def nonzero_divisor(self, b):
        """b with 0 (and -1, whose quotient of the minimum overflows) replaced by 3: the GPU's
        results there are unspecified."""
        bad = self.binop("==", b, self.literal(0))
        if b.ty.signed:
            bad = self.binop("|", bad, self.binop("==", b, self.literal(-1)))
        return self.where(bad, self.literal(3), b)

    # --- expressions
    def expr(self, depth, fam):
        d = self.d
        if depth <= 0 or chance(d, 0.22):
            return self.leaf(fam)
        for _ in range(6):
            node = self.compound(depth, fam)
            if node is not None:
                return node
        return self.leaf(fam)

    def compound(self, depth, fam):
        d = self.d
        if fam == "float":
            table = {"bin": 10, "muladd": 4, "minmax": 1.5, "where": 1.5, "neg": 0.7, "abs": 0.7,
                     "cast": 1.2, "fma": 0.8, "round": 0.6, "ieee": 0.6, "clamp": 0.4,
                     "bitcast": 0.3}
        elif fam == "int":
            table = {"bin": 12, "minmax": 1.5, "where": 1.5, "neg": 0.7, "abs": 0.7,
                     "invert": 0.8, "cast": 1.5, "bitcast": 0.5, "umulhi": 0.5, "cmp": 0.7}
        else:  # "cast": conversions between all types
            table = {"cast": 8, "bitcast": 2, "bin": 3, "where": 1, "minmax": 1}
        kind = weighted(d, table)
        sub = depth - 1
        if kind == "bin":
            ops = BIN_FLOAT if fam == "float" else BIN_INT
            if fam == "cast":
                ops = {"+": 1, "*": 1, "-": 1}
            op = weighted(d, ops)
            a = self.expr(sub, fam)
            b = self.operand_literal(a.ty) if chance(d, 0.3) else self.expr(sub, fam)
            if op in ("//", "%") and a.ty.kind != FLOAT and b.ty.kind != FLOAT:
                if b.lit:
                    if b.value in (0, -1) or isinstance(b.value, float):
                        return None
                elif b.ty.kind == INT:
                    b = self.nonzero_divisor(b)
                    if b is None:
                        return None
                else:
                    return None
            if op in ("<<", ">>"):
                ct = computation_type(a.ty, a.lit, b.ty, b.lit)
                if ct is None or ct.kind != INT or a.lit:
                    return None
                if b.lit:
                    b = self.literal(d.int(0, ct.bits - 1))
                elif b.ty.kind == INT:
                    b = self.binop("&", b, self.literal(ct.bits - 1))
                else:
                    return None
            if op == "/":
                ct = computation_type(a.ty, a.lit, b.ty, b.lit, True)
                if ct != F64:
                    return None  # fp32 division is approximate on the GPU: the math category
            if op not in ("//", "%", "<<", ">>") and b.lit and chance(d, 0.25):
                a, b = b, a
            node = self.binop(op, a, b)
            if node is not None:
                self.ops.add(op)
            return node
        if kind == "muladd":
            a, b, c = self.expr(sub, fam), self.expr(sub, fam), self.expr(sub, fam)
            form = d.int(0, 4)
            p = self.binop("*", a, b)
            if p is None:
                return None
            if form == 0:
                node = self.binop("+", p, c)
            elif form == 1:
                node = self.binop("-", p, c)
            elif form == 2:
                node = self.binop("-", c, p)
            elif form == 3:
                q = self.binop("*", c, self.expr(sub, fam))
                node = self.binop("+", p, q) if q is not None else None
            else:
                neg = Node(f"(-{p.src})", p.ty, p.shape, "neg", (p,))
                node = self.binop("+", neg, c)
            if node is not None:
                self.ops.add("muladd")
            return node
        if kind == "cmp":
            a = self.expr(sub, fam)
            b = self.operand_literal(a.ty) if chance(d, 0.4) else self.expr(sub, fam)
            node = self.binop(choice(d, CMP), a, b)
            if node is not None:
                self.ops.add("cmp")
            return node
        if kind == "minmax":
            a = self.expr(sub, fam)
            b = self.operand_literal(a.ty) if chance(d, 0.3) else self.expr(sub, fam)
            fn = choice(d, ["maximum", "minimum"])
            node = self.minmax(fn, a, b, nan=a.ty.kind == FLOAT and chance(d, 0.2))
            if node is not None:
                self.ops.add(fn + ("_nan" if node.arg else ""))
            return node
        if kind == "where":
            c = self.condition(sub, fam)
            a = self.expr(sub, fam)
            b = self.operand_literal(a.ty) if chance(d, 0.3) else self.expr(sub, fam)
            if c is None:
                return None
            if chance(d, 0.5):
                a, b = b, a
            node = self.where(c, a, b)
            if node is not None:
                self.ops.add("where")
            return node
        if kind in ("neg", "abs", "invert"):
            a = self.expr(sub, fam)
            if a.ty.kind == BOOL and kind != "invert":
                return None
            if kind == "invert" and a.ty.kind == FLOAT:
                return None
            self.ops.update({kind, f"{kind}:{a.ty.name}"})
            if kind == "neg":
                return Node(f"(-{a.src})", a.ty, a.shape, "neg", (a,))
            if kind == "invert":
                return Node(f"(~{a.src})", a.ty, a.shape, "invert", (a,))
            return self.call("tl.abs", [a.src], a.ty, "abs", (a,))
        if kind == "cast":
            a = self.expr(sub, fam)
            targets = FLOATS + INTS + [B1]
            if fam == "int":
                targets = INTS + [B1]
            elif fam == "float" and chance(d, 0.7):
                targets = FLOATS
            ty = choice(d, targets)
            if ty == a.ty:
                return None
            if a.ty == F32 and ty in (F16, BF16) and chance(d, 0.3):
                self.ops.add("cast_rtz")
                return self.cast(a, ty, rtz=True)
            self.ops.add("cast")
            return self.safe_cast(a, ty)
        if kind == "bitcast":
            a = self.expr(sub, fam)
            if a.ty.kind == BOOL or (a.ty.kind == FLOAT and a.op != "load"):
                return None  # computed NaNs differ in their payload bits, which a bitcast shows
            partners = bitcast_partners(a.ty)
            if fam == "int":
                partners = [t for t in partners if t.kind == INT] or partners
            self.ops.add("bitcast")
            return self.cast(a, choice(d, partners), bitcast=True)
        if kind == "umulhi":
            ty = choice(d, [I32, U32, I64, U64])
            a, b = self.safe_cast(self.expr(sub, fam), ty), self.safe_cast(self.expr(sub, fam), ty)
            self.ops.update({"umulhi", f"umulhi:{ty.name}"})
            if ty.signed:
                self.ops.add("umulhi_signed")  # Triton's umulhi is unsigned for every type
            if ty.bits == 64 and a.shape != b.shape:
                self.ops.add("umulhi64_broadcast")
            return self.call("tl.umulhi", [a.src, b.src], ty, "umulhi", (a, b))
        if kind == "fma":
            xs = [self.expr(sub, fam) for _ in range(3)]
            ty = F64 if any(x.ty == F64 for x in xs) else F32
            xs = [self.safe_cast(x, ty) for x in xs]
            self.ops.update({"fma", f"fma:{ty.name}"})
            if ty == F32 and any(self.few_bits(x) for x in xs[:2]):
                self.ops.add("fma32_tie")
            return self.call("tl.fma", [x.src for x in xs], ty, "fma", xs)
        if kind == "round":
            a = self.expr(sub, fam)
            ty = F64 if a.ty == F64 else F32
            a = self.safe_cast(a, ty)
            fn = choice(d, ["floor", "ceil"])
            self.ops.add(fn)
            if ty == F32 and self.may_be_subnormal(a):
                self.ops.add("subnormal_input")  # cvt.rmi/rpi.ftz flush them on the GPU
            return self.call(f"tl.{fn}", [a.src], ty, fn, (a,))
        if kind == "ieee":  # the correctly rounded fp32 square root and division
            fn = choice(d, ["sqrt_rn", "div_rn"])
            a = self.safe_cast(self.expr(sub, fam), F32)
            self.ops.add(fn)
            if fn == "sqrt_rn":
                return self.call("tl.sqrt_rn", [a.src], F32, fn, (a,))
            b = self.safe_cast(self.expr(sub, fam), F32)
            return self.call("tl.math.div_rn", [a.src, b.src], F32, fn, (a, b))
        if kind == "clamp":
            a = self.expr(sub, fam)
            if a.ty.kind != FLOAT or a.ty == F64:
                return None  # Triton 3.6 fails to lower an fp64 clamp (LLVM translation)
            lo = choice(d, [-1.0, -0.5, 0.0, -100.0])
            hi = choice(d, [0.5, 1.0, 2.0, 100.0])
            self.ops.update({"clamp", "clamp_nan"})
            if a.ty in (F16, BF16):
                self.ops.add("minmax_promotes")
            ty = F64 if a.ty == F64 else F32  # the literal bounds are fp32 tensors (core.py)
            return self.call("tl.clamp", [a.src, render_literal(lo), render_literal(hi)], ty,
                             "clamp", (a,), arg=(lo, hi))
        raise AssertionError(kind)

    def condition(self, depth, fam):
        d = self.d
        if chance(d, 0.2):
            return self.load(B1, "full")
        a = self.expr(max(depth - 1, 0), fam)
        b = self.operand_literal(a.ty) if chance(d, 0.5) else self.expr(max(depth - 1, 0), fam)
        node = self.binop(choice(d, CMP), a, b)
        if node is not None:
            self.ops.add("cmp")
        return node

    # --- the end of an element-wise case
    def store(self, r, check, shape=None):
        """Store `r` over the case's index space, the lanes of undefined loads masked off."""
        shape = self.shape if shape is None else shape
        self.lines.append(f"    @res = {r.src}")
        self.lines.append(f'    tl.static_assert(@res.dtype == {r.ty.tl}, "fuzz: result is {r.ty.name}")')
        value = "@res"
        if tuple(r.shape) != tuple(shape):
            value = f"tl.broadcast_to({value}, {list(shape)})"
        if not r.shape:
            self.ops.add("broadcast_scalar")
        value = self.to_container(value, r.ty)
        masks = list(self.undefined)
        if chance(self.d, 0.15):
            masks.append(self.mask_node("full"))
            self.ops.add("store_mask")
        mask = None
        for m in masks:
            mask = m if mask is None else self.binop("&", mask, m)
        out = self.output(r.ty, PROGRAMS * math.prod(shape), check)
        extra = f", mask={mask.src}" if mask is not None else ""
        self.lines.append(f"    tl.store(@{out} + @o, {value}{extra})")
        return out, mask

    @staticmethod
    def to_container(value, ty):
        if ty.kind == BOOL:
            return f"{value}.to(tl.int8)"
        if ty.unsigned:
            return f"{value}.to({ty.container.tl}, bitcast=True)"
        return value


# ----------------------------------------------------------------------------- case kinds

def _elementwise(b, fam):
    d = b.d
    if chance(d, 0.6):
        b.setup_1d(choice(d, [16, 32, 64, 128]))
    else:
        b.setup_2d(choice(d, [2, 4, 8, 16]), choice(d, [4, 8, 16, 32]))
    r = None
    for _ in range(6):  # an operation at the root, not a bare leaf
        r = b.compound(d.int(1, 4), fam)
        if r is not None:
            break
    if r is None:
        r = b.expr(1, fam)
    if r.op in ("index", "scalar") and r.shape != b.shape:
        r = b.binop("+", r, b.load(r.ty))
    if r is None or r.op == "index":
        r = b.load(I32)
    out, mask = b.store(r, {"mode": "exact"})
    return r, mask, b.shape


def _math(b):
    d = b.d
    b.setup_1d(choice(d, [32, 64, 128]))
    fn = choice(d, APPROX)
    fam = "float" if chance(d, 0.85) else "int"
    ty = F64 if chance(d, 0.2) else F32
    a = b.expr(d.int(0, 2), fam)
    if fn in ("div", "fdiv", "fdiv_ieee"):
        c = b.expr(d.int(0, 2), fam)
        if fn != "div" or a.ty.kind == FLOAT or c.ty.kind == FLOAT:
            a, c = b.safe_cast(a, ty if fn == "div" else F32), b.safe_cast(c, ty if fn == "div" else F32)
        if fn == "div":
            r = b.binop("/", a, c)
            if r is None:
                r = b.binop("/", b.safe_cast(a, F32), b.safe_cast(c, F32))
        else:
            args = [a.src, c.src] + (["ieee_rounding=True"] if fn == "fdiv_ieee" else [])
            r = b.call("tl.fdiv", args, F32, fn, (a, c))
    else:
        a = b.safe_cast(a, ty)
        r = b.call(f"tl.{fn}", [a.src], ty, fn, (a,))
        if fn in ("sqrt", "rsqrt") and ty == F32 and (
                "*" in a.src or any(i.mode in ("special", "wide") for i in b.inputs)):
            b.ops.add("subnormal_input")  # the GPU's sqrt.approx/rsqrt.approx flush them
    r.approx = True
    b.ops.add(fn)
    b.store(r, {"mode": "ulp", "op": fn})


def _reduce(b):
    d = b.d
    two_d = chance(d, 0.6)
    if two_d:
        b.setup_2d(choice(d, [1, 2, 4, 8, 16, 32]), choice(d, [2, 4, 8, 16, 32, 64]))
    else:
        b.setup_1d(choice(d, [16, 32, 64, 128, 256]))
    fam = choice(d, ["int", "float", "float"])
    op = weighted(d, {"sum": 3, "max": 2, "min": 2, "argmax": 1.5, "argmin": 1.5,
                      "xor_sum": 1 if fam == "int" else 0})
    if op in ("argmax", "argmin"):
        # ties between NaNs depend on the order of the combination, which differs: no NaNs
        ty = b.leaf_type(fam)
        if ty.kind == BOOL:
            ty = I8
        e = b.load(ty, mode=("normal" if ty.kind == FLOAT else None), other="always")
    else:
        e = b.expr(d.int(0, 2), fam)
        if e.ty.kind == BOOL or (op == "xor_sum" and e.ty.kind != INT):
            e = b.safe_cast(e, I32)
    b.lines.append(f"    @e = {e.src}")
    e = Node("@e", e.ty, e.shape, "var", (e,))
    if e.shape != b.shape:
        if not e.shape:
            b.ops.add("broadcast_scalar")
        b.lines.append(f"    @e = tl.broadcast_to(@e, {list(b.shape)})")
        e = Node("@e", e.ty, b.shape, "var", (e,))
    axes = [0, 1, None] if two_d else [0, None]
    if op in ("argmax", "argmin"):
        axes = axes[:-1]  # Triton 3.6 refuses axis=None for them (_reduce_with_indices)
    axis = choice(d, axes)
    keep = chance(d, 0.4)
    ty = reduce_type(op, e.ty)
    kw = f"axis={axis}" + (", keep_dims=True" if keep else "")
    red = f"tl.{op}(@e, {kw})" if chance(d, 0.8) else f"@e.{op}({kw})"
    shape = list(b.shape)
    if axis is None:
        shape = [1] * len(shape) if keep else []
    elif keep:
        shape[axis] = 1
    else:
        del shape[axis]
    n = math.prod(b.shape) if axis is None else b.shape[axis]
    b.ops.update({op, f"axis={axis}", f"{op}:{e.ty.name}"})
    if op in ("max", "min") and e.ty.kind == FLOAT:
        b.ops.add("signed_zero_max")
    b.lines.append(f"    @red = {red}")
    b.lines.append(f'    tl.static_assert(@red.dtype == {ty.tl}, "fuzz: {op} gives {ty.name}")')
    exact = ty.kind != FLOAT or op != "sum"
    if exact and keep and op in ("max", "min") and chance(d, 0.3):
        # the reduction broadcast back against its operand
        post = b.binop("-", e, Node("@red", ty, shape, "var"))
        if post is not None:
            b.ops.add("broadcast_back")
            b.lines.append(f"    @res = {post.src}")
            out = b.output(post.ty, PROGRAMS * math.prod(b.shape), {"mode": "exact"})
            b.lines.append(f"    tl.store(@{out} + @o, {b.to_container('@res', post.ty)})")
            return
    check = {"mode": "exact"}
    if not exact:
        # any two summation orders differ by at most 2 (n - 1) u sum|x|: the kernel also stores
        # sum|x|, and compare.py checks the difference against that bound
        aux = f"tl.sum(tl.abs(@e), {kw})"
        check = {"mode": "bound", "n": n, "u": ty.eps}
    _store_shaped(b, "@red", ty, shape, check)
    if not exact:
        b.lines.append(f"    @aux = {aux}")
        _store_shaped(b, "@aux", ty, shape, {"mode": "aux"})
        b.outputs[-2].check["aux"] = b.outputs[-1].name


def reduce_type(op, ty):
    """Triton's standard library: sum widens narrow ints to (u)int32; max/min widen narrow
    floats to fp32 and narrow ints to int32; arg-reductions give int32."""
    if op in ("argmax", "argmin"):
        return I32
    if op == "sum":
        if ty.kind == INT and ty.bits < 32:
            return I32 if ty.signed else U32
        return ty
    if op in ("max", "min"):
        if ty == BF16 or (ty.kind == FLOAT and ty.bits < 32):
            return F32
        if ty.kind == INT and ty.bits < 32:
            return I32
        return ty
    return ty  # xor_sum


def scan_type(op, ty):
    """cumsum: bf16 -> fp32, narrow ints -> (u)int32; cumprod: bf16 -> fp32; a scan with a
    combine function keeps the type."""
    if op in ("cumsum", "cumprod") and ty == BF16:
        return F32
    if op == "cumsum" and ty.kind == INT and ty.bits < 32:
        return I32 if ty.signed else U32
    return ty


def _store_shaped(b, value, ty, shape, check):
    """Store a value of block shape `shape` (a reduction's result) contiguously per program."""
    size = math.prod(shape)
    name = b.output(ty, PROGRAMS * size, check)
    dims = [i for i, s in enumerate(shape) if s > 1]
    if not shape:
        off = "pid"
    elif not dims:
        off = f"pid + tl.zeros({list(shape)}, dtype=tl.int32)"
    else:
        terms, stride = [], 1
        for i in reversed(range(len(shape))):
            if shape[i] == 1:
                continue
            idx = f"tl.arange(0, {shape[i]})"
            if len(shape) == 2:
                idx += "[:, None]" if i == 0 else "[None, :]"
            terms.append(idx if stride == 1 else f"{idx} * {stride}")
            stride *= shape[i]
        off = f"pid * {size} + " + " + ".join(reversed(terms))
    b.lines.append(f"    tl.store(@{name} + {off}, {b.to_container(value, ty)})")


def _scan(b):
    d = b.d
    two_d = chance(d, 0.5)
    if two_d:
        b.setup_2d(choice(d, [1, 2, 4, 8, 16]), choice(d, [2, 4, 8, 16, 32]))
    else:
        b.setup_1d(choice(d, [16, 32, 64, 128]))
    fam = choice(d, ["int", "float"])
    op = weighted(d, {"cumsum": 3, "cumprod": 2, "scan_max": 1, "scan_add": 1})
    if op == "cumprod" and fam == "float":
        e = b.load(choice(d, FLOATS), mode="unit", other="always")
    else:
        e = b.expr(d.int(0, 2), fam)
    if e.ty.kind == BOOL:
        e = b.cast(e, I32)
    b.lines.append(f"    @e = {e.src}")
    if e.shape != b.shape:
        if not e.shape:
            b.ops.add("broadcast_scalar")
        b.lines.append(f"    @e = tl.broadcast_to(@e, {list(b.shape)})")
    e = Node("@e", e.ty, b.shape, "var", (e,))
    axis = choice(d, [0, 1]) if two_d else 0
    reverse = chance(d, 0.3)
    rev = ", reverse=True" if reverse else ""
    if op == "scan_max" and e.ty == BF16:
        op = "cumsum"  # tl.maximum returns fp32 for bf16: Triton refuses that combine function
    ty = scan_type(op, e.ty)
    if (e.ty == BF16 and op in ("cumsum", "cumprod")) or (
            op == "cumprod" and e.ty.kind == INT and e.ty.bits < 32):
        b.ops.add("scan_types")  # types minitriton gives otherwise than Triton (known.py)

    def scan_src(x):
        if op in ("cumsum", "cumprod"):
            return f"tl.{op}({x}, axis={axis}{rev})"
        fn = "_fz_max" if op == "scan_max" else "_fz_add"
        return f"tl.associative_scan({x}, {axis}, {fn}{rev})"
    b.ops.update({op, "reverse" if reverse else "forward", f"{op}:{e.ty.name}"})
    if op == "scan_max" and e.ty.kind == FLOAT:
        b.ops.add("signed_zero_max")
    b.lines.append(f"    @red = {scan_src('@e')}")
    b.lines.append(f'    tl.static_assert(@red.dtype == {ty.tl}, "fuzz: {op} gives {ty.name}")')
    exact = ty.kind != FLOAT or op == "scan_max"
    check = {"mode": "exact"}
    n = b.shape[axis]
    if not exact:
        check = {"mode": "bound", "n": n, "u": ty.eps}
    _store_shaped(b, "@red", ty, list(b.shape), check)
    if not exact:
        b.lines.append(f"    @aux = {scan_src('tl.abs(@e)')}")
        _store_shaped(b, "@aux", ty, list(b.shape), {"mode": "aux"})
        b.outputs[-2].check["aux"] = b.outputs[-1].name


def _dot(b):
    d = b.d
    kind = choice(d, DOT_KINDS)
    M, N = choice(d, [16, 32, 64]), choice(d, [16, 32, 64])
    K = choice(d, [32, 64] if kind == "int8" else [16, 32, 64])
    ty = {"tf32": F32, "ieee": F32, "tf32x3": F32, "bf16": BF16, "fp16": F16, "fp16acc": F16,
          "int8": I8, "fp64": F64}[kind]
    out_ty = {"int8": I32, "fp16acc": F16, "fp64": F64}.get(kind, F32)
    mode = "full" if kind == "int8" else weighted(d, {"normal": 3, "ints": 1, "wide": 0.5})
    if kind == "fp16acc":  # an fp16 accumulator overflows mid-sum on the GPU: stay in range
        mode = weighted(d, {"std": 3, "ints": 1})
    b.category = "dot_" + kind
    b.shape = (M, N)
    b.lines += [f"    @rm = tl.arange(0, {M})", f"    @rn = tl.arange(0, {N})",
                f"    @rk = tl.arange(0, {K})"]
    a_buf = b.buffer(ty, PROGRAMS * M * K, mode)
    b_buf = b.buffer(ty, PROGRAMS * K * N, mode)
    kv = d.int(1, K) if chance(d, 0.25) else None
    load = "tl.load({})" if kv is None else "tl.load({}, mask={}, other=0)"
    a_mask = f"@rk[None, :] < {kv}"
    a_src = load.format(f"@{a_buf} + pid * {M * K} + @rm[:, None] * {K} + @rk[None, :]", a_mask)
    trans = chance(d, 0.35)
    if trans:  # b stored as (N, K) and transposed in the kernel
        bt_mask = f"@rk[None, :] < {kv}"
        src = load.format(f"@{b_buf} + pid * {K * N} + @rn[:, None] * {K} + @rk[None, :]", bt_mask)
        form = d.int(0, 2)
        b_src = [f"tl.trans({src})", f"({src}).T", f"tl.permute({src}, (1, 0))"][form]
        b.ops.add("trans")
    else:
        b_mask = f"@rk[:, None] < {kv}"
        b_src = load.format(f"@{b_buf} + pid * {K * N} + @rk[:, None] * {N} + @rn[None, :]", b_mask)
    if kv is not None:
        b.ops.add("k_mask")
    b.lines += [f"    @a = {to_logical(a_src, ty)}", f"    @b = {to_logical(b_src, ty)}"]
    kw = {"tf32": choice(d, ["", ', input_precision="tf32"']), "ieee": ', input_precision="ieee"',
          "tf32x3": ', input_precision="tf32x3"', "fp16acc": ", out_dtype=tl.float16"}.get(kind, "")
    acc_form = weighted(d, {"none": 5, "acc": 3, "add": 1})
    if acc_form == "acc" and kind in ("int8", "fp64"):
        # Triton 3.6 wants the accumulator's type as out_dtype (semantic.dot asserts it)
        kw += f", out_dtype={out_ty.tl}"
    acc_buf = None
    if acc_form != "none":
        acc_buf = b.buffer(out_ty, PROGRAMS * M * N, "full" if out_ty.kind == INT else "normal")
        b.lines.append(f"    @acc = tl.load(@{acc_buf} + pid * {M * N} + @rm[:, None] * {N} + "
                       f"@rn[None, :])")
    call = "tl.dot(@a, @b, @acc" + kw + ")" if acc_form == "acc" else "tl.dot(@a, @b" + kw + ")"
    if acc_form == "add":
        call += " + @acc"
    b.ops.update({kind, acc_form})
    b.lines.append(f"    @res = {call}")
    b.lines.append(f'    tl.static_assert(@res.dtype == {out_ty.tl}, "fuzz: dot gives {out_ty.name}")')
    check = {"mode": "exact"} if out_ty.kind == INT else {
        "mode": "dot", "K": K, "u": out_ty.eps, "M": M, "N": N, "a": a_buf, "b": b_buf,
        "trans": trans, "kv": kv, "acc": acc_buf, "tf32": kind == "tf32"}
    out = b.output(out_ty, PROGRAMS * M * N, check)
    b.lines.append(f"    tl.store(@{out} + pid * {M * N} + @rm[:, None] * {N} + @rn[None, :], "
                   f"{b.to_container('@res', out_ty)})")


def to_logical(src, ty):
    return f"{src}.to({ty.tl}, bitcast=True)" if ty.unsigned else src


def _rand(b, normal):
    d = b.d
    b.setup_1d(choice(d, [16, 32, 64, 128]))
    if chance(d, 0.8):
        seed = "@" + b.scalar_arg(choice(d, [I32, I32, I32, I64]))
    else:
        seed = str(d.int(0, 2**31 - 1))
    k, c = choice(d, [1, 3, 7, 1000]), choice(d, [0, 5, 2**20, 2**31 - 200])
    offs = f"@o * {k} + {c}" if c < 2**31 - 200 else f"@o + {c}"
    wide = chance(d, 0.2)
    if wide:
        offs = f"(@o * {k}).to(tl.int64) + {choice(d, [0, 2**33 + 1, 2**40])}"
        b.ops.add("offset64")
    b.lines.append(f"    @off = {offs}")
    rounds = ", n_rounds=7" if chance(d, 0.15) else ""
    if normal:
        fn = choice(d, ["randn", "randn4x"])
    else:
        fn = choice(d, ["rand", "randint", "randint4x", "rand4x"])
    b.ops.add(fn)
    ty = {"rand": F32, "rand4x": F32, "randn": F32, "randn4x": F32}.get(fn, U32)
    check = {"mode": "ulp", "op": "randn"} if normal else {"mode": "exact"}
    outs = ["@r0", "@r1", "@r2", "@r3"] if fn.endswith("4x") else ["@r0"]
    b.lines.append(f"    {', '.join(outs)} = tl.{fn}({seed}, @off{rounds})")
    for v in outs:
        b.lines.append(f'    tl.static_assert({v}.dtype == {ty.tl}, "fuzz: {fn} gives {ty.name}")')
        name = b.output(ty, PROGRAMS * b.shape[0], dict(check))
        b.lines.append(f"    tl.store(@{name} + @o, {b.to_container(v, ty)})")


def generate(draw, cid=0, category=None, avoid=frozenset()):
    """One case, every choice drawn from `draw`; `category` fixes its kind, and no case uses a
    construct named in `avoid` (the tags of known.py)."""
    for _ in range(50):
        cat = category or weighted(draw, CATEGORIES)
        b = Builder(draw, cid, cat, frozenset(avoid))
        ref = None
        try:
            if cat in ("int", "float", "cast", "mask"):
                fam = {"int": "int", "float": "float", "cast": "cast"}.get(cat)
                if cat == "mask":
                    fam = choice(draw, ["int", "float"])
                ref = _elementwise(b, fam)
            elif cat == "math":
                _math(b)
            elif cat == "reduce":
                _reduce(b)
            elif cat == "scan":
                _scan(b)
            elif cat == "dot":
                _dot(b)
            elif cat in ("rand", "randn"):
                _rand(b, cat == "randn")
        except Avoided:
            continue
        if not b.outputs:
            continue
        return Case(cid, b.category, sorted(b.ops), b.inputs, b.outputs, b.lines, ref)
    raise RuntimeError("no case could be generated")


def generate_seeded(seed, category=None, avoid=frozenset()):
    return generate(RandomDraw(seed), seed, category, avoid)
