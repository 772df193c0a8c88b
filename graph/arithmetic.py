"""Exact, bounded arithmetic: the calculator's parser and evaluator (no ``eval``).

Grammar (``^`` and ``**`` are right-associative and bind tighter than unary minus)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "x" | "×" | "/" | "÷") unary)*
    unary   := ("-" | "+") unary | power
    power   := primary (("^" | "**") unary)?
    primary := NUMBER | "(" expr ")"

Numbers are kept as ``Fraction`` so ``0.1 + 0.2`` is exactly ``0.3``. Only a non-integer
power leaves the rationals; it is computed with 50-digit decimals and marked inexact.
Every dimension of the work is bounded so hostile input is refused quickly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

MAX_INPUT_CHARS = 1000
MAX_DEPTH = 100
MAX_RESULT_BITS = 100_000  # about 30,000 decimal digits
INEXACT_DIGITS = 15


class CalculationError(ValueError):
    """The input is not a valid or computable expression; the message says why."""


@dataclass(frozen=True)
class Value:
    """A number and whether it is exact."""

    number: Fraction
    exact: bool = True


_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<op>\*\*|[-+*/^()x×÷−])"
    r")"
)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into numbers and operators, or raise with the offending character."""
    if len(text) > MAX_INPUT_CHARS:
        raise CalculationError(f"expression longer than {MAX_INPUT_CHARS} characters")
    tokens: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise CalculationError(f"unexpected character {text[pos:].strip()[:1]!r}")
        token = match.group("number") or match.group("op")
        tokens.append("-" if token == "−" else token)
        pos = match.end()
    if not tokens:
        raise CalculationError("empty expression")
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self) -> Value:
        value = self.expr()
        if self.peek() is not None:
            raise CalculationError(f"unexpected {self.peek()!r}")
        return value

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalculationError(f"nested more than {MAX_DEPTH} levels deep")

    def expr(self) -> Value:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            right = self.term()
            number = value.number + right.number if op == "+" else value.number - right.number
            value = _checked(Value(number, value.exact and right.exact))
        return value

    def term(self) -> Value:
        value = self.unary()
        while self.peek() in ("*", "x", "×", "/", "÷"):
            op = self.take()
            right = self.unary()
            if op in ("/", "÷"):
                if right.number == 0:
                    raise CalculationError("division by zero")
                number = value.number / right.number
            else:
                number = value.number * right.number
            value = _checked(Value(number, value.exact and right.exact))
        return value

    def unary(self) -> Value:
        if self.peek() in ("-", "+"):
            self._enter()
            op = self.take()
            operand = self.unary()
            self.depth -= 1
            return Value(-operand.number, operand.exact) if op == "-" else operand
        return self.power()

    def power(self) -> Value:
        base = self.primary()
        if self.peek() in ("^", "**"):
            self.take()
            self._enter()
            exponent = self.unary()
            self.depth -= 1
            return _power(base, exponent)
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
            return _number(token)
        raise CalculationError(f"unexpected {token!r}")


def _number(token: str) -> Value:
    mantissa, _, exponent = token.lower().partition("e")
    if exponent and abs(int(exponent)) > 10_000:
        raise CalculationError(f"exponent in {token!r} is too large")
    return _checked(Value(Fraction(Decimal(token))))


def _checked(value: Value) -> Value:
    n = value.number
    if n.numerator.bit_length() > MAX_RESULT_BITS or n.denominator.bit_length() > MAX_RESULT_BITS:
        raise CalculationError("result is too large to compute")
    return value


def _power(base: Value, exponent: Value) -> Value:
    b, e = base.number, exponent.number
    if e.denominator == 1:
        exact = base.exact and exponent.exact
        if b == 0:
            if e < 0:
                raise CalculationError("zero cannot be raised to a negative power")
            return Value(Fraction(0 if e > 0 else 1), exact)
        if abs(b) == 1:  # ±1 to any power, however large, without computing it
            return Value(Fraction(-1 if b < 0 and e % 2 else 1), exact)
        # Estimate the size before computing: |b|^e has about |e| * bits(b) bits.
        bits = max(b.numerator.bit_length(), b.denominator.bit_length())
        if abs(e) * bits > MAX_RESULT_BITS:
            raise CalculationError("result is too large to compute")
        return _checked(Value(b ** int(e), exact))
    # A fractional exponent: real result only for a non-negative base; irrational in general.
    if b < 0:
        raise CalculationError("a negative number cannot be raised to a fractional power")
    if b == 0:
        return Value(Fraction(0), base.exact and exponent.exact)
    with localcontext() as ctx:
        ctx.prec = 50
        magnitude = abs(float(e)) * max(
            abs(b.numerator.bit_length() - b.denominator.bit_length()), 1
        )
        if magnitude > MAX_RESULT_BITS:
            raise CalculationError("result is too large to compute")
        approx = (Decimal(b.numerator) / Decimal(b.denominator)) ** (
            Decimal(e.numerator) / Decimal(e.denominator)
        )
    result = Fraction(approx)
    # Exact when the approximation round-trips (e.g. 4^0.5 = 2).
    exact = base.exact and exponent.exact and result**e.denominator == b**e.numerator
    return _checked(Value(result, exact))


def evaluate(expression: str) -> Value:
    """Parse and evaluate ``expression``; raise ``CalculationError`` with a reason."""
    return _Parser(tokenize(expression)).parse()


def format_value(value: Value) -> str:
    """Print exactly when the decimal expansion terminates, else 15 significant digits."""
    n = value.number
    if value.exact and n.denominator == 1:
        return str(n.numerator)
    if value.exact and _terminates(n.denominator):
        return _exact_decimal(n)
    with localcontext() as ctx:
        ctx.prec = INEXACT_DIGITS
        approx = Decimal(n.numerator) / Decimal(n.denominator)
    text = format(approx.normalize(), "f") if abs(approx.adjusted()) < 21 else format(approx, "g")
    return text


def _terminates(denominator: int) -> bool:
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1


def _exact_decimal(n: Fraction) -> str:
    digits = 0
    while (n * 10**digits).denominator != 1:
        digits += 1
    scaled = abs(n.numerator * 10**digits // n.denominator)
    whole, frac = divmod(scaled, 10**digits)
    sign = "-" if n < 0 else ""
    return f"{sign}{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".")


def calculate(expression: str) -> str:
    """Evaluate and format; never raises: invalid input gives ``Error: <reason>``."""
    try:
        return format_value(evaluate(expression))
    except CalculationError as exc:
        return f"Error: {exc}"
    except (ValueError, ArithmeticError, RecursionError, OverflowError) as exc:
        return f"Error: cannot evaluate ({type(exc).__name__})"


# Runs of characters that can belong to an expression; words around them are dropped.
_CANDIDATE = re.compile(r"[\d.\s()+\-−*/^×÷xXeE]+")
_OPERATOR = re.compile(r"\*\*|[-+*/^×÷x−]")


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


def is_complete_expression(text: str) -> bool:
    """True when ``text`` (minus a trailing ``=`` or ``?``) is one valid calculation.

    It must have at least one operator. Such prompts go to the calculator with no model call.
    """
    stripped = text.strip().rstrip("=?").strip()
    if not stripped or not _has_operator(stripped):
        return False
    try:
        evaluate(stripped)
    except (CalculationError, ValueError, ArithmeticError, RecursionError, OverflowError):
        return False
    return True


def extract_expression(text: str) -> str | None:
    """Deterministically pull the arithmetic out of a sentence (``what's 12*7?`` → ``12*7``).

    Takes the longest run of expression characters that has a digit and an operator and
    evaluates; ``None`` when there is none (then the calculator asks the model).
    """
    best: str | None = None
    for match in _CANDIDATE.finditer(text.replace("X", "x")):
        candidate = match.group().strip().strip(".").strip()
        # "e"/"x" at the edges are letters of neighbouring words, not operators.
        candidate = candidate.strip("eExX ").strip()
        if not any(ch.isdigit() for ch in candidate) or not _has_operator(candidate):
            continue
        try:
            evaluate(candidate)
        except (CalculationError, ValueError, ArithmeticError, RecursionError, OverflowError):
            continue
        if best is None or len(candidate) > len(best):
            best = candidate
    return best
