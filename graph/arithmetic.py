"""Exact, bounded arithmetic: the calculator's parser and evaluator (no ``eval``).

Grammar (``^`` and ``**`` are right-associative and bind tighter than unary minus)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "x" | "×" | "/" | "÷") unary)*
    unary   := ("-" | "+") unary | power
    power   := primary (("^" | "**") unary)?
    primary := NUMBER | "(" expr ")"

Numbers. A value is an exact ``Fraction`` while that stays cheap, so ``0.1 + 0.2`` is exactly
``0.3``. Otherwise it is a ``Decimal`` of 50 significant digits whose exponent may reach
±100,000,000; such a decimal is still exact when nothing was rounded (``10^-100000``).
A non-integer power is irrational in general and computed as ``exp(e * ln b)`` in decimals,
except for the cheap cases proved exact (``4^0.5 = 2``, ``(27/8)^(2/3) = 2.25``).

The calculator cannot be made slow: the route node calls it on the server's thread, and a
big-integer operation cannot be interrupted once started, so every size is bounded before
the work is done (the a priori bounds):

* the input is at most ``MAX_INPUT_CHARS`` characters and ``MAX_DEPTH`` levels deep;
* a ``Fraction`` result is produced only when its predicted size is at most
  ``MAX_EXACT_BITS`` and its predicted cost (quadratic for ``+ - * /``, whose ``gcd`` and
  division are quadratic in CPython, sub-quadratic for powers) fits what is left of the
  expression's ``WORK_BUDGET``; otherwise the operation is done in 50-digit decimals, whose
  cost does not depend on the size of the numbers;
* big fractions become decimals from their leading bits only (a shift, never a long
  division), and no ``str()`` of an integer over 1,000 digits is ever taken;
* magnitudes beyond 1e±100,000,000 are refused before the decimal work that would need them;
* the exactness check of a fractional power runs only for bases of at most
  ``ROOT_CHECK_BITS`` bits and root orders below that size;
* the decimal work per operation is bounded by its precision, so an expression costs at
  most ``WORK_BUDGET`` plus a few hundred decimal operations (about 50 ms in all).

An inexact sum that cancels below the working precision (``2^0.5 - 2^0.5``, or
``(2^200000 + 1) - 2^200000`` past the exact limits) is an error, not digits of noise.

Display. An exact result whose decimal expansion terminates within ``MAX_PRINT_DIGITS``
digits is printed in full. Anything else is rounded to 15 significant digits: in plain
notation for magnitudes from 1e-20 to 1e21, else in scientific notation (``1e-100000``);
either is prefixed with ``≈`` whenever the digits shown are not exactly the value (``1/3``
prints ``≈0.333333333333333``, ``2^20000`` prints ``≈3.98027684033797e+6020``).

Reading. A number is read whole, as written, or refused (``UnreadableNumber``): ``1,234``
has a thousands separator; ``1,5``, ``1.000,5``, ``0x1F``, ``12:30``, ``5kg`` and ``50%`` are
refused with the reason, never shortened to the digits the grammar could take.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import (
    ROUND_HALF_EVEN,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    Subnormal,
    Underflow,
)
from fractions import Fraction
from typing import Any

MAX_INPUT_CHARS = 1000
MAX_DEPTH = 100
MAX_EXACT_BITS = 150_000  # a Fraction's numerator and denominator: about 45,000 digits
WORK_BUDGET = 100_000.0  # big-integer work per expression, in units of about a microsecond
MAX_EXP10 = 100_000_000  # magnitudes from 1e-100000000 to 1e+100000000
WORK_DIGITS = 50  # significant digits of an approximate (decimal) value
INEXACT_DIGITS = 15  # significant digits shown when a result is rounded
MAX_PRINT_DIGITS = 1000  # longest exact expansion printed in full
ROOT_CHECK_BITS = 4096  # largest numerator/denominator checked for an exact root

# Guard digits: integer powers amplify a relative error by the exponent (at most 1e18 on
# that path), ``exp(y)`` by |y| (at most 2.4e8 before the magnitude limit).
_POW_DIGITS = WORK_DIGITS + 20
_LN_DIGITS = WORK_DIGITS + 15
# An inexact sum or difference that loses more leading digits than this is only noise.
_CANCEL_DIGITS = WORK_DIGITS - INEXACT_DIGITS - 5
_BITS_PER_DIGIT = math.log2(10)
_TOO_LARGE = "result is too large to compute"
_TOO_SMALL = f"result is too close to zero to represent (below 1e-{MAX_EXP10})"

Number = Fraction | Decimal


class CalculationError(ValueError):
    """The input is not a valid or computable expression; the message says why."""


@dataclass(frozen=True)
class Value:
    """A number and whether it is exact (a ``Fraction`` always is; a ``Decimal`` may be)."""

    number: Number
    exact: bool = True


#: What a number stands for while only the grammar is checked.
_UNCOMPUTED = Value(Fraction(0))


class _Budget:
    """Big-integer work left for one expression (or one ``extract_expression`` call)."""

    def __init__(self, units: float = WORK_BUDGET) -> None:
        self.left = units

    def afford(self, cost: float) -> bool:
        if cost > self.left:
            return False
        self.left -= cost
        return True


def _gcd_cost(bits: int) -> float:
    """Fraction ``+ - * /`` on operands of ``bits`` bits: gcd and division are quadratic."""
    return (bits / 1000) ** 2 * 4.5


def _pow_cost(bits: int) -> float:
    """Building an integer of ``bits`` bits by (Karatsuba) squaring, and once more to test it."""
    return (bits / 1000) ** 1.6 * 3


def _bits(f: Fraction) -> int:
    return max(f.numerator.bit_length(), f.denominator.bit_length())


def _quote(token: str | None) -> str:
    """A token for an error message, shortened: a number may be 1,000 digits long."""
    if token is not None and len(token) > 30:
        token = token[:12] + "..." + token[-12:]
    return repr(token)


# A number as a person writes it: ``1,234.5`` is read with its thousands separators (English
# convention, the one the answers use: a comma only between groups of exactly three digits,
# a point for decimals), ``1.5e3`` in scientific notation.
_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<number>(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<op>\*\*|[-+*/^()xX×÷−])"
    r")"
)
# What a person writes glued to a number: letters, digits, ``_ ' ’ %``, and ``. , :`` between
# them (``1.000,5``, ``12:30``, ``0x1F``, ``5kg``, ``50%``). Such a word is read whole or refused.
_WORD = re.compile(r"(?:[\w'’%]|[.,:](?=\w))+")
_GLUED = re.compile(r"[\w'’%]|[.,:](?=\w)")
_GLUE = re.compile(r"(?![xX])" + _GLUED.pattern)  # after a number: "x" multiplies (6x7)
_HEX = re.compile(r"0[xX][0-9a-fA-F]")
_TIME = re.compile(r"\d+(?::\d+)+")
_DECIMAL_COMMA = re.compile(r"\d{1,3}(?:\.\d{3})*,\d+|\d+,\d+")


class UnreadableNumber(CalculationError):
    """A number written in a way the calculator does not read (``12:30``, ``0x1F``, ``1,5``)."""


def _word_at(text: str, pos: int) -> str:
    """The word glued around ``text[pos]`` (``12:30`` around its ``:``), or ``""``."""
    for match in _WORD.finditer(text):
        if match.start() <= pos < match.end():
            return match.group()
    return ""


def _unreadable(word: str) -> UnreadableNumber:
    """Why ``word`` is not a number, in one line.

    Each notation is refused rather than guessed at, because each has a second reading:
    ``0x10`` is hexadecimal 16 or the product ``0 x 10`` (``x`` multiplies); ``12:30`` a time
    or a ratio; ``1,5`` a German 1.5 or an English list of 1 and 5; ``1.000,5`` is
    unambiguous alone but would be read by the opposite convention from ``1,234``.
    """
    if _HEX.match(word):
        reason = "looks like a hexadecimal number, which the calculator does not read"
        return UnreadableNumber(f"{word!r} {reason}: write it in decimal")
    if _TIME.fullmatch(word):
        reason = "is a time of day (or a ratio), not a number the calculator can compute with"
        return UnreadableNumber(f"{word!r} {reason}")
    if "," in word:
        reason = "a comma is read only between groups of three digits (1,234)"
        if _DECIMAL_COMMA.fullmatch(word):
            decimal = word.replace(".", "").replace(",", ".")
            reason += f"; for a decimal, write {decimal!r}"
        return UnreadableNumber(f"{word!r} is not a number the calculator reads: {reason}")
    if word.endswith("%"):
        fraction = f"{word[:-1]}/100"
        return UnreadableNumber(f"{word!r} is a percentage: write it as a fraction ({fraction})")
    return UnreadableNumber(f"{word!r} is not a number the calculator can read")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into numbers and operators, or raise with the offending character.

    A number is taken whole: one glued to letters or separators it does not read (``12:30``,
    ``0x1F``, ``1,5``) raises ``UnreadableNumber`` naming it, never yields its digits alone.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise CalculationError(f"expression longer than {MAX_INPUT_CHARS} characters")
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            bad = len(text) - len(text[pos:].lstrip())
            word = _word_at(text, bad)
            if any(ch.isdigit() for ch in word):
                raise _unreadable(word)
            raise CalculationError(f"unexpected character {text[bad]!r}")
        token = match.group("number") or match.group("op")
        end = match.end()
        if match.group("number") is not None:
            # "0x10" is refused, not read as the product 0 x 10: see _unreadable.
            hexadecimal = token == "0" and _HEX.match(text, end - 1)
            if hexadecimal or _GLUE.match(text, end):
                raise _unreadable(_word_at(text, end - 1))
        tokens.append({"−": "-", "X": "x"}.get(token, token))
        pos = end
    if not tokens:
        raise CalculationError("empty expression")
    return tokens


class _Parser:
    """Recursive descent over the tokens; with no budget it checks the grammar only.

    Checking only the grammar computes nothing, so it tells a well-formed expression that
    has no value (``1/0``) from text that is not an expression at all.
    """

    def __init__(self, tokens: list[str], budget: _Budget | None) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0
        self.budget = budget

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self) -> Value:
        value = self.expr()
        if self.peek() is not None:
            raise CalculationError(f"unexpected {_quote(self.peek())}")
        return value

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalculationError(f"nested more than {MAX_DEPTH} levels deep")

    def _apply(self, op: str, left: Value, right: Value) -> Value:
        """``left op right``, or ``left`` unchanged when only the grammar is checked."""
        if self.budget is None:
            return left
        if op in ("+", "-"):
            return _add(left, right if op == "+" else _negate(right), self.budget)
        if op in ("/", "÷"):
            return _divide(left, right, self.budget)
        if op in ("^", "**"):
            return _power(left, right, self.budget)
        return _multiply(left, right, self.budget)

    def expr(self) -> Value:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            value = self._apply(op, value, self.term())
        return value

    def term(self) -> Value:
        value = self.unary()
        while self.peek() in ("*", "x", "×", "/", "÷"):
            op = self.take()
            value = self._apply(op, value, self.unary())
        return value

    def unary(self) -> Value:
        if self.peek() in ("-", "+"):
            self._enter()
            op = self.take()
            operand = self.unary()
            self.depth -= 1
            return _negate(operand) if op == "-" else operand
        return self.power()

    def power(self) -> Value:
        base = self.primary()
        if self.peek() in ("^", "**"):
            op = self.take()
            self._enter()
            exponent = self.unary()
            self.depth -= 1
            return self._apply(op, base, exponent)
        return base

    def primary(self) -> Value:
        token = self.peek()
        if token is None:
            raise CalculationError("expression ends too early")
        if token == "(":
            self.take()
            self._enter()
            value = self.expr()
            self.depth -= 1
            if self.peek() != ")":
                raise CalculationError("missing closing parenthesis")
            self.take()
            return value
        if token[0].isdigit() or token[0] == ".":
            self.take()
            return _number(token, self.budget) if self.budget is not None else _UNCOMPUTED
        raise CalculationError(f"unexpected {_quote(token)}")


# ---- decimals: bounded precision and exponent range ----


@contextmanager
def _decimal(prec: int = WORK_DIGITS) -> Iterator[Context]:
    """A decimal context whose overflow and underflow become a ``CalculationError``."""
    ctx = Context(
        prec=prec,
        rounding=ROUND_HALF_EVEN,
        Emax=MAX_EXP10,
        Emin=-MAX_EXP10,
        traps=[Overflow, Underflow, Subnormal, InvalidOperation, DivisionByZero],
    )
    try:
        yield ctx
    except Overflow:
        raise CalculationError(_TOO_LARGE) from None
    except (Underflow, Subnormal):
        raise CalculationError(_TOO_SMALL) from None


def _ratio(numerator: int, denominator: int, ctx: Context) -> tuple[Decimal, bool]:
    """``numerator / denominator`` rounded to ``ctx.prec`` digits, and whether it is exact.

    Only the leading bits of each integer are divided, so the cost is linear in their size
    (a shift) however large they are; the dropped bits are far below the precision.
    """
    negative = numerator < 0
    numerator = abs(numerator)
    keep = int(ctx.prec * _BITS_PER_DIGIT) + 64
    shift_n = max(numerator.bit_length() - keep, 0)
    shift_d = max(denominator.bit_length() - keep, 0)
    if shift_d and not shift_n:  # a short decimal over a huge denominator, e.g. 3e-9999
        short = _short_decimal(numerator, denominator, ctx.prec)
        if short is not None:
            return (short.copy_negate() if negative else short), True
    ctx.clear_flags()
    quotient = ctx.divide(Decimal(numerator >> shift_n), Decimal(denominator >> shift_d))
    if shift_n != shift_d:
        quotient = ctx.multiply(quotient, ctx.power(Decimal(2), shift_n - shift_d))
    exact = not ctx.flags[Inexact] and shift_n == 0 and shift_d == 0
    return (quotient.copy_negate() if negative else quotient), exact


def _short_decimal(numerator: int, denominator: int, digits: int) -> Decimal | None:
    """``numerator / denominator`` exactly when it is a decimal of at most ``digits`` digits.

    The denominator must be ``2^twos * 5^fives``; the sizes are checked before the one
    power of five (at most ``MAX_EXACT_BITS`` bits) is computed.
    """
    twos = (denominator & -denominator).bit_length() - 1
    rest = denominator >> twos
    fives = round(rest.bit_length() / math.log2(5)) if rest > 1 else 0
    places = max(twos, fives)
    size = numerator.bit_length() + (places - twos) + (places - fives) * math.log2(5)
    if size > digits * _BITS_PER_DIGIT or rest != 5**fives:
        return None
    coefficient = numerator * 2 ** (places - twos) * 5 ** (places - fives)
    if coefficient >= 10**digits:
        return None
    return Decimal(f"{coefficient}e-{places}")


def _dec(x: Number, ctx: Context) -> tuple[Decimal, bool]:
    """``x`` rounded to ``ctx.prec`` digits, and whether that is exact."""
    if isinstance(x, Fraction):
        return _ratio(x.numerator, x.denominator, ctx)
    ctx.clear_flags()
    rounded = ctx.plus(x)
    return rounded, not ctx.flags[Inexact]


def _tidy(value: Value) -> Value:
    """An exact decimal of ordinary size goes back to being a ``Fraction``."""
    x = value.number
    if isinstance(x, Decimal) and value.exact:
        if x.is_zero():
            return Value(Fraction(0))
        exponent = x.as_tuple().exponent
        if isinstance(exponent, int) and abs(exponent) <= 2 * WORK_DIGITS:
            return Value(Fraction(x))
    return value


# ---- the operations ----


def _number(token: str, budget: _Budget) -> Value:
    mantissa, _, exponent_text = token.replace(",", "").lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return Value(Fraction(0))
    # At most MAX_INPUT_CHARS digits, far below int()'s 4,300-digit limit.
    scale = (int(exponent_text) if exponent_text else 0) - len(fraction)
    if abs(scale + len(digits) - 1) > MAX_EXP10:
        raise CalculationError(f"exponent in {_quote(token)} is too large")
    coefficient = int(digits)
    bits = coefficient.bit_length() + int(abs(scale) * _BITS_PER_DIGIT) + 1
    if bits <= MAX_EXACT_BITS and budget.afford(_pow_cost(bits)):
        if scale >= 0:
            return Value(Fraction(coefficient * 10**scale))
        return Value(Fraction(coefficient, 10**-scale))
    return Value(Decimal(f"{digits}e{scale}"))


def _negate(value: Value) -> Value:
    x = value.number
    return Value(-x if isinstance(x, Fraction) else x.copy_negate(), value.exact)


def _add(a: Value, b: Value, budget: _Budget) -> Value:
    x, y = a.number, b.number
    exact = a.exact and b.exact
    if isinstance(x, Fraction) and isinstance(y, Fraction):
        bits = _bits(x) + _bits(y) + 1
        if bits <= MAX_EXACT_BITS and budget.afford(_gcd_cost(bits)):
            return Value(x + y, exact)
    with _decimal() as ctx:
        dx, exact_x = _dec(x, ctx)
        dy, exact_y = _dec(y, ctx)
        ctx.clear_flags()
        total = ctx.add(dx, dy)
        exact = exact and exact_x and exact_y and not ctx.flags[Inexact]
    if not exact and not dx.is_zero() and not dy.is_zero():
        largest = max(dx.adjusted(), dy.adjusted())
        if total.is_zero() or total.adjusted() < largest - _CANCEL_DIGITS:
            raise CalculationError(
                f"the result cancels out below the {WORK_DIGITS}-digit working precision"
            )
    return _tidy(Value(total, exact))


def _multiply(a: Value, b: Value, budget: _Budget) -> Value:
    return _product(a, b, budget, operator.mul, "multiply")


def _divide(a: Value, b: Value, budget: _Budget) -> Value:
    if b.number == 0:
        raise CalculationError("division by zero")
    return _product(a, b, budget, operator.truediv, "divide")


def _product(
    a: Value, b: Value, budget: _Budget, exact_op: Callable[[Any, Any], Any], decimal_op: str
) -> Value:
    """``a * b`` or ``a / b``: exact while affordable, else in bounded-precision decimals."""
    x, y = a.number, b.number
    exact = a.exact and b.exact
    if isinstance(x, Fraction) and isinstance(y, Fraction):
        bits = _bits(x) + _bits(y)
        if bits <= MAX_EXACT_BITS and budget.afford(_gcd_cost(bits)):
            return Value(exact_op(x, y), exact)
    with _decimal() as ctx:
        dx, exact_x = _dec(x, ctx)
        dy, exact_y = _dec(y, ctx)
        ctx.clear_flags()
        result = getattr(ctx, decimal_op)(dx, dy)
        exact = exact and exact_x and exact_y and not ctx.flags[Inexact]
    return _tidy(Value(result, exact))


def _is_integer(x: Number) -> bool:
    if isinstance(x, Fraction):
        return x.denominator == 1
    return x == x.to_integral_value()


def _small_integer(x: Number) -> int | None:
    """The integer ``x`` when it has at most ~1,100 digits (``None`` for larger decimals)."""
    if isinstance(x, Fraction):
        return x.numerator
    return int(x) if x.adjusted() <= MAX_PRINT_DIGITS + 100 else None


def _power(base: Value, exponent: Value, budget: _Budget) -> Value:
    b, e = base.number, exponent.number
    exact = base.exact and exponent.exact
    if b == 0:
        if e < 0:
            raise CalculationError("zero cannot be raised to a negative power")
        return Value(Fraction(0 if e > 0 else 1), exact)
    if b == 1:  # 1 to any power, however large, without computing it
        return Value(Fraction(1), exact)
    if not _is_integer(e):
        # A fractional exponent: a real result only for a positive base.
        if b < 0:
            raise CalculationError("a negative number cannot be raised to a fractional power")
        if exact and isinstance(b, Fraction) and isinstance(e, Fraction):
            root = _exact_root(b, e.denominator)
            if root is not None:  # e.g. 4^0.5 = 2: an integer power of an exact root
                return _integer_power(root, Fraction(e.numerator), True, budget)
        return Value(_exp_ln(b, e), False)
    return _integer_power(b, e, exact, budget)


def _integer_power(b: Number, e: Number, exact: bool, budget: _Budget) -> Value:
    n = _small_integer(e)
    # A decimal exponent beyond ~1,100 digits ends in zeros (at most 1,000 significant
    # digits), so it is even.
    negative = b < 0 and n is not None and n % 2 == 1
    if b == 1 or b == -1:
        return Value(Fraction(-1 if negative else 1), exact)
    if isinstance(b, Fraction) and n is not None:
        # |b|^n has |n| * log2(max(numerator, denominator)) bits: bound it before computing it.
        if abs(n) <= MAX_EXACT_BITS:
            size = max(math.log2(abs(b.numerator)), math.log2(b.denominator))
            bits = int(abs(n) * size) + 1
            if bits <= MAX_EXACT_BITS and budget.afford(_pow_cost(bits)):
                return Value(b**n, exact)
    if n is not None and abs(n) < 10**18:
        with _decimal(_POW_DIGITS) as ctx:
            db, exact_b = _dec(b, ctx)
            # log10|b^n|, to refuse an out-of-range result before computing it.
            magnitude = ctx.multiply(ctx.log10(ctx.copy_abs(db)), n)
            if magnitude > MAX_EXP10 + 1:
                raise CalculationError(_TOO_LARGE)
            if magnitude < -MAX_EXP10 - 1:
                raise CalculationError(_TOO_SMALL)
            ctx.clear_flags()
            result = ctx.power(db, n)
            exact = exact and exact_b and not ctx.flags[Inexact]
            ctx.prec = WORK_DIGITS
            ctx.clear_flags()
            result = ctx.plus(result)
            exact = exact and not ctx.flags[Inexact]
        return _tidy(Value(result, exact))
    magnitude = _exp_ln(abs(b) if isinstance(b, Fraction) else b.copy_abs(), e)
    return Value(magnitude.copy_negate() if negative else magnitude, False)


def _exact_root(b: Fraction, order: int) -> Fraction | None:
    """``b ** (1/order)`` when it is rational and that is cheap to decide, else ``None``.

    A root of order ``k`` of an integer above 1 is at least 2, so ``k`` is at most the
    integer's bit length; both are bounded by ``ROOT_CHECK_BITS``.
    """
    size = _bits(b)
    if size > ROOT_CHECK_BITS or order > size:
        return None
    numerator = _integer_root(b.numerator, order)
    if numerator is None:
        return None
    denominator = _integer_root(b.denominator, order)
    if denominator is None:
        return None
    return Fraction(numerator, denominator)


def _integer_root(n: int, k: int) -> int | None:
    """The integer ``r`` with ``r ** k == n`` (``n`` at most ``ROOT_CHECK_BITS`` bits)."""
    if n < 2:
        return n
    if k > n.bit_length():
        return None
    if n.bit_length() // k <= 40:  # a float's 53 bits carry the whole root
        guess = round(2 ** (math.log2(n) / k))
        for candidate in (guess - 1, guess, guess + 1):
            if candidate > 0 and candidate**k == n:
                return candidate
        return None
    # Newton's method from just above the root, which a 40-digit estimate provides.
    with _decimal(40) as ctx:
        estimate = ctx.power(ctx.plus(Decimal(n)), ctx.divide(1, k))
        x = int(ctx.multiply(estimate, Decimal("1.000000000000000000000000000001"))) + 2
    while True:
        y = ((k - 1) * x + n // x ** (k - 1)) // k
        if y >= x:
            break
        x = y
    return x if x**k == n else None


def _exp_ln(b: Number, e: Number) -> Decimal:
    """``b ** e`` for ``b > 0`` as ``exp(e * ln b)``, refused beyond the magnitude limit."""
    with _decimal(_LN_DIGITS) as ctx:
        log_b = _ln(b, ctx)
        de, _ = _dec(e, ctx)
        if log_b.is_zero() or de.is_zero():
            return Decimal(1)
        scale = log_b.adjusted() + de.adjusted()
        if scale < -_LN_DIGITS - 5:  # b^e = 1 + y with y far below the precision
            return Decimal(1)
        positive = log_b.is_signed() == de.is_signed()
        if scale > 12:  # |y| > 1e12, while the limit is ln(10) * 1e8
            raise CalculationError(_TOO_LARGE if positive else _TOO_SMALL)
        y = ctx.multiply(log_b, de)
        if y > _LN_LIMIT:
            raise CalculationError(_TOO_LARGE)
        if y < -_LN_LIMIT:
            raise CalculationError(_TOO_SMALL)
        result = ctx.exp(y)
        ctx.prec = WORK_DIGITS
        return ctx.plus(result)


# |ln| of the largest and smallest magnitudes: ln(10) * (MAX_EXP10 + 1), to 20 digits.
_LN_LIMIT = Decimal(10).ln(Context(prec=20)) * (MAX_EXP10 + 1)


def _ln(b: Number, ctx: Context) -> Decimal:
    """Natural logarithm of ``b > 0``, accurate relative to itself even when ``b`` is near 1."""
    if isinstance(b, Fraction):
        offset = b.numerator - b.denominator  # b - 1 = offset / denominator, exactly
        if abs(offset) * 100 < b.denominator:
            return _ln1p(_ratio(offset, b.denominator, ctx)[0], ctx)
        return ctx.ln(_ratio(b.numerator, b.denominator, ctx)[0])
    if Decimal("0.99") < b < Decimal("1.01"):
        # b has at most MAX_INPUT_CHARS digits and exponent >= -(digits + 1): exact.
        exact_ctx = Context(prec=len(b.as_tuple().digits) + 5)
        return _ln1p(ctx.plus(exact_ctx.subtract(b, 1)), ctx)
    return ctx.ln(ctx.plus(b))


def _ln1p(t: Decimal, ctx: Context) -> Decimal:
    """``ln(1 + t)`` for ``|t| < 0.01`` as ``2 atanh(t / (2 + t))`` (about 15 terms)."""
    if t.is_zero():
        return t
    u = ctx.divide(t, ctx.add(2, t))
    u2 = ctx.multiply(u, u)
    total, power, k = u, u, 1
    while True:
        power = ctx.multiply(power, u2)
        k += 2
        term = ctx.divide(power, k)
        if term.is_zero() or term.adjusted() < total.adjusted() - ctx.prec - 2:
            break
        total = ctx.add(total, term)
    return ctx.multiply(total, 2)


def evaluate(expression: str) -> Value:
    """Parse and evaluate ``expression``; raise ``CalculationError`` with a reason."""
    return _evaluate(expression, _Budget())


def _evaluate(expression: str, budget: _Budget) -> Value:
    return _Parser(tokenize(expression), budget).parse()


# ---- display ----


def format_value(value: Value) -> str:
    """Print exactly when the expansion terminates within 1,000 digits, else 15 digits."""
    x = value.number
    if x == 0:
        return "0"
    if value.exact:
        text = _exact_text(x)
        if text is not None:
            return text
    with _decimal() as ctx:
        approx, _ = _dec(x, ctx)
        ctx.prec = INEXACT_DIGITS
        rounded = ctx.plus(approx)
        # A value shown rounded says so, in either notation (1/3 ≈ 0.333333333333333).
        marker = "" if value.exact and _equals(x, rounded) else "≈"
        if abs(rounded.adjusted()) < 21:
            return marker + format(rounded.normalize(ctx), "f")
    return marker + _scientific(rounded)


def _scientific(d: Decimal) -> str:
    digits = "".join(map(str, d.as_tuple().digits)).rstrip("0") or "0"
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{'-' if d.is_signed() else ''}{mantissa}e{d.adjusted():+d}"


def _equals(x: Number, d: Decimal) -> bool:
    """Whether the exact ``x`` equals the short decimal ``d`` (sizes checked first)."""
    if isinstance(x, Decimal):
        return x == d
    sign, digit_tuple, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    mantissa = int("".join(map(str, digit_tuple))) * (-1 if sign else 1)
    if abs(exponent) * _BITS_PER_DIGIT > MAX_EXACT_BITS + 64:
        return False  # 10^|exponent| is far larger than x's numerator or denominator
    if exponent >= 0:
        return x.denominator == 1 and x.numerator == mantissa * 10**exponent
    return x.numerator * 10**-exponent == mantissa * x.denominator


def _exact_text(x: Number) -> str | None:
    """The full decimal expansion of ``x`` when it terminates within the print limit."""
    if isinstance(x, Decimal):
        _, digits, exponent = x.as_tuple()
        assert isinstance(exponent, int)
        length = len(digits) + exponent if exponent >= 0 else max(len(digits), -exponent)
        if length > MAX_PRINT_DIGITS:
            return None
        text = format(x, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    numerator, denominator = x.numerator, x.denominator
    if denominator == 1:
        if numerator.bit_length() > MAX_PRINT_DIGITS * _BITS_PER_DIGIT + 1:
            return None
        return str(numerator) if abs(numerator) < 10**MAX_PRINT_DIGITS else None
    places = _decimal_places(denominator)
    if places is None or places > MAX_PRINT_DIGITS:
        return None
    if numerator.bit_length() - denominator.bit_length() > MAX_PRINT_DIGITS * 4:
        return None
    scaled = abs(numerator) * 10**places // denominator  # exact: 10^places / d is integral
    if scaled >= 10**MAX_PRINT_DIGITS:
        return None
    whole, fraction = divmod(scaled, 10**places)
    sign = "-" if numerator < 0 else ""
    return f"{sign}{whole}.{fraction:0{places}d}".rstrip("0").rstrip(".")


def _decimal_places(denominator: int) -> int | None:
    """Digits after the point of ``1/denominator``; ``None`` if it does not terminate soon."""
    twos = (denominator & -denominator).bit_length() - 1
    rest = denominator >> twos
    if rest == 1:
        return twos
    if rest.bit_length() > MAX_PRINT_DIGITS * math.log2(5) + 2:
        return None  # more than MAX_PRINT_DIGITS fives, or another prime factor
    guess = round(rest.bit_length() / math.log2(5))
    for fives in (guess - 1, guess, guess + 1):
        if fives > 0 and 5**fives == rest:
            return max(twos, fives)
    return None


def calculate(expression: str) -> str:
    """Evaluate and format; never raises: invalid input gives ``Error: <reason>``."""
    try:
        return format_value(evaluate(expression))
    except CalculationError as exc:
        return f"Error: {exc}"
    except (ValueError, ArithmeticError, RecursionError, OverflowError) as exc:
        return f"Error: cannot evaluate ({type(exc).__name__})"


# Runs of characters that can belong to an expression; words around them are dropped. A
# number is taken with everything glued to it (``1,234``, ``12:30``, ``0x1F``, ``5kg``), so
# what the calculator cannot read is refused as written, never shortened to its last digits
# (``1,234 * 2`` was once answered ``234 * 2 = 468``).
_CANDIDATE = re.compile(r"(?:\d(?:[\w'’%]|[.,:](?=\w))*|[.\s()+\-−*/^×÷xXeE])+")
_OPERATOR = re.compile(r"\*\*|[-+*/^×÷xX−]")
# extract_expression evaluates candidates, longest first, up to this many characters in all.
_EXTRACT_CHARS = 2 * MAX_INPUT_CHARS


def _has_operator(text: str) -> bool:
    """A binary operator, not just a sign: ``-5`` is a number, ``2-5`` a calculation."""
    return bool(_OPERATOR.search(text.lstrip("+-−")))


_ARITHMETIC_SIGN = re.compile(r"[+*/^×÷%=]|\d\s*[-−x]\s*[\d(]")
_ARITHMETIC_WORD = re.compile(
    r"\b(plus|minus|times|multipl\w*|divid\w*|sum|product|difference|quotient|squared|cubed|"
    r"power|root|percent\w*|average|calculate|compute|how much is)\b",
    re.IGNORECASE,
)


def could_be_calculation(text: str) -> bool:
    """Whether a prompt could be "a math equation with numbers and operators" at all.

    It needs a digit and an operator, as a sign (``12*7``, ``3 - 2``, ``15%``) or a word
    (``plus``, ``divided``, ``squared``...). ``Which port is 51820?`` has neither an operator
    sign nor word, so the classification question is not worth a model call.
    """
    if not any(ch.isdigit() for ch in text):
        return False
    return bool(_ARITHMETIC_SIGN.search(text) or _ARITHMETIC_WORD.search(text))


def check_grammar(expression: str) -> None:
    """Raise ``CalculationError`` unless ``expression`` is a well-formed expression.

    Nothing is computed: ``1/0`` and ``10^10^10`` are well-formed and pass; their values
    fail later, in ``evaluate``, with the reason.
    """
    _Parser(tokenize(expression), None).parse()


def _well_formed(text: str) -> bool:
    try:
        check_grammar(text)
    except CalculationError:
        return False
    return True


def is_complete_expression(text: str) -> bool:
    """True when ``text`` (minus a trailing ``=`` or ``?``) is one well-formed calculation.

    It must have at least one operator. Such prompts go to the calculator with no model call,
    whether or not they have a value: ``1/0`` is answered with the reason it has none.
    """
    stripped = text.strip().rstrip("=?").strip()
    return bool(stripped) and _has_operator(stripped) and _well_formed(stripped)


def is_arithmetic_only(text: str) -> bool:
    """Whether ``text`` holds nothing but numbers and operators (no word to read).

    Such text is meant as an expression even when it is malformed (``2 +``): its error is
    reported as it is, never handed to a model to guess what it meant.
    """
    stripped = text.strip().rstrip("=?").strip()
    return any(ch.isdigit() for ch in stripped) and _CANDIDATE.fullmatch(stripped) is not None


def _candidate(text: str, start: int, end: int) -> tuple[str, bool]:
    """The run ``text[start:end]`` without what belongs to the sentence, and if it is glued.

    Spaces, a full stop and the letters ``e``/``x`` of neighbouring words are trimmed from
    the edges (a point before a digit is kept: ``.5``). A number left glued to a word
    (``v2+3``, ``3 + 4x more``) takes that word back and the run is marked glued, so the
    calculator refuses the text as written instead of computing the digits beside it.
    """
    while start < end and (
        text[start].isspace()
        or text[start] in "eExX"
        or (text[start] == "." and not text[start + 1 : start + 2].isdigit())
    ):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in "eExX."):
        end -= 1
    inner = start, end
    if start < end and (text[start].isdigit() or text[start] == "."):
        while start > 0 and _GLUED.match(text, start - 1):
            start -= 1
    if start < end and text[end - 1].isdigit():
        while end < len(text) and _GLUED.match(text, end):
            end += 1
    return text[start:end], (start, end) != inner


def extract_expression(text: str) -> str | None:
    """Deterministically pull the arithmetic out of a sentence (``what's 12*7?`` → ``12*7``).

    Takes the longest run of expression characters that has a digit and an operator and is
    well-formed, exactly as written; ``None`` when there is none (then the calculator asks
    the model). Whether it has a value is the calculator's to say: ``what is 1/0?`` extracts
    ``1/0``. Failing a well-formed run, the longest run with a number the calculator cannot
    read (``12:30 + 1``) is returned whole, for the calculator to refuse with the reason. At
    most twice ``MAX_INPUT_CHARS`` characters of candidates are checked, so a long prompt
    full of hostile runs costs at most two parses.
    """
    candidates: list[tuple[str, bool]] = []
    for match in _CANDIDATE.finditer(text):
        candidate, glued = _candidate(text, *match.span())
        if any(ch.isdigit() for ch in candidate) and _has_operator(candidate):
            candidates.append((candidate, glued))
    checked = 0
    unreadable: str | None = None
    # Longest first; the stable sort keeps the earliest of equally long ones first.
    for candidate, glued in sorted(candidates, key=lambda c: len(c[0]), reverse=True):
        if len(candidate) > MAX_INPUT_CHARS:
            continue  # refused by tokenize anyway
        checked += len(candidate)
        if checked > _EXTRACT_CHARS:
            break
        if not glued:
            try:
                check_grammar(candidate)
                return candidate
            except UnreadableNumber:
                pass
            except CalculationError:
                continue  # malformed: not an expression, perhaps words between numbers
        unreadable = unreadable or candidate
    return unreadable
