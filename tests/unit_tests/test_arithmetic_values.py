"""The calculator's values at the edges of its limits: exact where documented, ``≈`` otherwise.

Each expected value is derived independently of the calculator (integer arithmetic,
``fractions.Fraction``, ``decimal`` at a higher precision), never copied from its output.
"""

from decimal import Context, Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.arithmetic import (
    _integer_root,
    calculate,
    could_be_calculation,
    extract_expression,
    is_complete_expression,
)

_CANCELS = "Error: the result cancels out below the 50-digit working precision"
_TOO_LARGE = "Error: result is too large to compute"
_TOO_SMALL = "Error: result is too close to zero to represent (below 1e-100000000)"


def _expansion(value: Fraction) -> str:
    """The terminating decimal expansion of ``value``, by integer arithmetic."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
    scaled = int(value * 10**places)
    whole, fraction = divmod(scaled, 10**places)
    if not places:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{fraction:0{places}d}".rstrip("0").rstrip(".")


def _rounded(value: Decimal) -> str:
    """``value`` to 15 significant digits, in plain notation (magnitudes 1e-20 to 1e21)."""
    return format(Context(prec=15).plus(value).normalize(Context(prec=15)), "f")


# ---- exact results printed in full, up to 1,000 digits ----


def test_an_integer_of_up_to_1000_digits_is_printed_in_full():
    assert calculate("2^3320") == str(2**3320)  # 1,000 digits
    assert calculate("10^999") == "1" + "0" * 999
    assert calculate("-(10^999)") == "-1" + "0" * 999


def test_an_integer_of_1001_digits_is_shown_in_scientific_notation_without_marker():
    assert calculate("10^1000") == "1e+1000"
    assert calculate("-10^1000") == "-1e+1000"
    assert calculate("3*10^1000") == "3e+1000"
    assert calculate("-(25*10^1000)") == "-2.5e+1001"


def test_a_fraction_with_1000_decimal_places_is_printed_in_full():
    assert calculate("10^-1000") == "0." + "0" * 999 + "1"
    assert calculate("2^-1000") == _expansion(Fraction(1, 2**1000))
    assert calculate("10^-1001") == "1e-1001"


def test_a_fraction_with_a_long_integer_part_is_printed_in_full():
    assert calculate("2^300 + 0.5") == f"{2**300}.5"
    assert calculate("-(2^300 + 0.25)") == f"-{2**300}.25"
    # 1,001 digits before the point: rounded, with its marker
    assert calculate("10^1000 + 0.5") == "≈1e+1000"


def test_a_single_factor_of_five_in_the_denominator_is_exact():
    value = Fraction(1, 5 * 2**60)
    assert calculate("1/5/2^60") == _expansion(value)
    assert calculate("3/(5*2^60)") == _expansion(3 * value)


def test_an_exact_decimal_from_big_operands_is_printed_in_full():
    # 1e50000 is past the exact (Fraction) limit, a decimal; the quotient is still exact
    assert calculate("1e50000 / 1e49001") == "1" + "0" * 999  # 1,000 digits
    assert calculate("1e50000 / 1e49000") == "1e+1000"
    assert calculate("1e50000 / 1e49500") == "1" + "0" * 500
    assert calculate("1e-50000 * 1e49500") == "0." + "0" * 499 + "1"
    # trailing zeros of a decimal are not printed
    assert calculate("15e-50000 * 10e49799") == "0." + "0" * 198 + "15"
    assert calculate("-(15e-50000 * 10e49799)") == "-0." + "0" * 198 + "15"
    # 11^30 * 10^200, every digit exact
    assert calculate("(11e60000)^30 / 1e1799800") == str(11**30 * 10**200)


def test_an_exact_decimal_back_in_ordinary_range_stays_exact():
    assert calculate("1e50000 - 1e50000") == "0"
    assert calculate("(1e50000/1e49999)/3*3") == "10"
    assert calculate("(1e-50000*1e49900)/3*3") == "0." + "0" * 99 + "1"
    assert calculate("(1e-50000*1e49900)/3*3 * 1e100") == "1"


def test_a_short_numerator_over_a_huge_denominator_is_an_exact_decimal():
    assert calculate("123456e-9999 * 1e50000") == "1.23456e+40006"
    assert calculate("-123456e-9999 * 1e50000") == "-1.23456e+40006"
    assert calculate("3e-9999 * 1e50000") == "3e+40001"
    # 5^64 / 10^5064 = 1 / (2^5064 * 5^5000): a 45-digit decimal, exact
    assert calculate("5^64 * 1e-5064 * 1e50000 * 2^64") == "1e+45000"


def test_an_exact_power_of_ten_far_below_the_print_limit_has_no_marker():
    assert calculate("1e-45140") == "1e-45140"
    assert calculate("-1e-45140") == "-1e-45140"
    assert calculate("10^45154") == "1e+45154"


# ---- the magnitude limits ----


def test_the_largest_and_smallest_powers_of_ten_are_exact():
    assert calculate("10^100000000") == "1e+100000000"
    assert calculate("10^-100000000") == "1e-100000000"
    assert calculate("10^100000001") == _TOO_LARGE
    assert calculate("10^-100000001") == _TOO_SMALL


def test_a_fractional_power_past_the_limits_is_refused_with_the_reason():
    assert calculate("10^100000001.5") == _TOO_LARGE
    assert calculate("10^-100000001.5") == _TOO_SMALL
    assert calculate("(1e1000000)^(10^18)") == _TOO_LARGE


# ---- rounded values say so ----


def test_a_power_of_an_inexact_value_is_marked_rounded():
    assert calculate("2^(1e-80)") == "≈1"
    assert calculate("(-2^1e-80)^3") == "≈-1"
    assert calculate("2^(3*2^1e-80)") == "≈8"
    assert calculate("2^(3*2^1e-80) + 1") == "≈9"
    assert calculate("(2^0.5)^2") == "≈2"
    assert calculate("(1e50000)^(3*2^1e-80)") == "≈1e+150000"


def test_a_negated_or_powered_rounded_value_stays_marked():
    assert calculate("-(2^0.5)") == "≈-1.4142135623731"
    assert calculate("(-2)^(3*2^1e-80)") == "≈-8"
    assert calculate("(-2)^(2*2^1e-80)") == "≈4"


def test_huge_odd_and_even_powers_near_one_keep_their_sign():
    base = Decimal("0.99999999999999999999")
    ctx = Context(prec=60)
    value = ctx.exp(ctx.multiply(ctx.ln(base), 10**18 + 1))
    assert calculate("0.99999999999999999999^(10^18+1)") == "≈" + _rounded(value)
    assert calculate("(-0.99999999999999999999)^(10^18+1)") == "≈-" + _rounded(value)
    even = ctx.exp(ctx.multiply(ctx.ln(base), 10**18 + 2))
    assert calculate("(-0.99999999999999999999)^(10^18+2)") == "≈" + _rounded(even)


def test_a_fractional_power_of_a_decimal_near_one():
    ctx = Context(prec=60)
    value = ctx.exp(ctx.multiply(ctx.ln(Decimal(2)), Decimal("5e-11")))
    assert calculate("(2^(1e-10))^0.5") == "≈" + _rounded(value)
    below = ctx.exp(ctx.multiply(ctx.ln(Decimal(2)), Decimal("-5e-11")))
    assert calculate("(2^(-1e-10))^0.5") == "≈" + _rounded(below)


def test_an_irrational_power_carries_50_digits():
    # 2^0.5 to 50 digits: its digits 20 to 35 are revealed by subtracting the first 20
    sqrt2 = Context(prec=80).sqrt(Decimal(2))
    hidden = (sqrt2 - Decimal("1.4142135623730950488")) * 10**19
    assert calculate("(2^0.5 - 1.4142135623730950488) * 10^19") == "≈" + _rounded(hidden)


# ---- cancellation ----


def test_a_sum_cancelling_below_the_working_precision_is_an_error():
    assert calculate("2^0.5 * 2^0.5 - 2") == _CANCELS
    assert calculate("(10^24000 + 1) - 10^24000") == _CANCELS


def test_a_difference_of_30_digits_is_still_computed():
    assert calculate("2^0.5 - (2^0.5 - 1e-30)") == "≈1e-30"


def test_adding_zero_to_a_tiny_rounded_value_is_no_cancellation():
    mantissa = Context(prec=15).plus(Context(prec=30).sqrt(Decimal(50)))  # 10 / 2^0.5
    expected = f"≈{mantissa}e-41"
    assert calculate("0 + 2^-0.5 * 1e-40") == expected
    assert calculate("2^-0.5 * 1e-40 + 0") == expected
    assert calculate("0 - 2^-0.5 * 1e-40") == f"≈-{mantissa}e-41"


# ---- exact roots ----


@pytest.mark.parametrize(
    ("root", "order"),
    [(3**60 + 1, 2), (2**100 + 7, 3), (12345678901234567891, 2), (10**30 + 3, 5), (7**200, 2)],
)
def test_integer_root_of_a_large_perfect_power(root, order):
    assert _integer_root(root**order, order) == root
    assert _integer_root(root**order + 1, order) is None
    assert _integer_root(root**order - 1, order) is None


_ROOT_AND_ORDER = st.integers(2, 40).flatmap(
    lambda order: st.tuples(st.integers(2, 2 ** (4096 // order) - 1), st.just(order))
)


@settings(max_examples=150, deadline=None)
@given(_ROOT_AND_ORDER)
def test_integer_root_matches_integer_arithmetic(root_and_order):
    root, order = root_and_order
    power = root**order
    assert power.bit_length() <= 4096
    assert _integer_root(power, order) == root
    assert _integer_root(power + 1, order) is None
    assert _integer_root(power - 1, order) is None


def test_a_root_of_a_4096_bit_base_is_still_checked_for_exactness():
    assert calculate("(2^4095)^(1/5)") == str(2**819)
    assert calculate("(2^-4095)^(1/5)") == _expansion(Fraction(1, 2**819))


def test_a_root_of_a_large_perfect_square_is_exact():
    root = 12345678901234567891
    assert calculate(f"{root**2}^0.5") == str(root)
    assert calculate(f"({root**3})^(1/3)") == str(root)
    assert calculate(f"({root**2})^1.5") == str(root**3)
    # not a perfect square: rounded
    assert calculate("(10^40+1)^0.5") == "≈100000000000000000000"


# ---- messages ----


def test_an_unexpected_token_is_quoted_in_the_error():
    assert calculate("1 2") == "Error: unexpected '2'"
    thirty = "123456789012345678901234567890"
    assert calculate("1 " + thirty) == f"Error: unexpected '{thirty}'"
    long_token = "1234567890" * 4
    assert calculate("1 " + long_token) == "Error: unexpected '123456789012...901234567890'"
    assert calculate("1 " + thirty + "1") == "Error: unexpected '123456789012...012345678901'"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "0x1F + 1",
            "Error: '0x1F' looks like a hexadecimal number, which the calculator does not read:"
            " write it in decimal",
        ),
        (
            "12:30 + 1",
            "Error: '12:30' is a time of day (or a ratio), not a number the calculator can"
            " compute with",
        ),
        (
            "1,5 + 1",
            "Error: '1,5' is not a number the calculator reads: a comma is read only between"
            " groups of three digits (1,234); for a decimal, write '1.5'",
        ),
        (
            "1.000,5 + 1",
            "Error: '1.000,5' is not a number the calculator reads: a comma is read only between"
            " groups of three digits (1,234); for a decimal, write '1000.5'",
        ),
        (
            "1,2,3 + 1",
            "Error: '1,2,3' is not a number the calculator reads: a comma is read only between"
            " groups of three digits (1,234)",
        ),
        ("50% + 1", "Error: '50%' is a percentage: write it as a fraction (50/100)"),
        ("125% * 8", "Error: '125%' is a percentage: write it as a fraction (125/100)"),
    ],
)
def test_an_unreadable_number_is_refused_with_its_reason(expression, message):
    assert calculate(expression) == message


def test_other_refusals_name_their_reason():
    assert calculate("0^-1") == "Error: zero cannot be raised to a negative power"
    assert calculate("5$") == "Error: unexpected character '$'"
    assert calculate("5 $") == "Error: unexpected character '$'"


# ---- extraction ----


def test_could_be_calculation_needs_a_digit_and_an_operator():
    assert not could_be_calculation("what is plus minus times")
    assert could_be_calculation("what is 5 plus three")
    assert could_be_calculation("12 squared")
    assert not could_be_calculation("Which port is 51820?")


def test_a_trailing_operator_letter_is_not_a_complete_expression():
    assert not is_complete_expression("2*3 X")
    assert is_complete_expression("2*3 =")


@pytest.mark.parametrize(
    ("prompt", "expression"),
    [
        ("SIZE 2*3", "2*3"),
        ("X 2*3", "2*3"),
        ("2*3 X", "2*3"),
        ("2*3 E", "2*3"),
        ("Done. 2+3", "2+3"),
        ("what is .5+1", ".5+1"),
        ("what is .5+1 or 2*3", ".5+1"),
        (".5+1 or 2*3", ".5+1"),
        (".5+1", ".5+1"),
        ("answer(2+3)", "(2+3)"),
        ("v.5+1", "v.5+1"),
        ("v2+3", "v2+3"),
        ("the value e", None),
        ("2+2 or maybe e", "2+2"),
        ("9*9 or 1+2+3", "1+2+3"),
        ("1+2+3 or 9*9", "1+2+3"),
        ("is 1 * / 2 or 3*4", "3*4"),
    ],
)
def test_extract_expression_edges(prompt, expression):
    assert extract_expression(prompt) == expression


def _sum(length: int, first: str = "2") -> str:
    """A well-formed sum of exactly ``length`` characters."""
    body = "+1" * ((length - len(first)) // 2)
    return (first + "1" * ((length - len(first)) % 2) + body)[:length]


def _malformed(length: int) -> str:
    return "1*/" + _sum(length - 3, first="1")


def test_extraction_checks_candidates_up_to_1000_characters():
    expression = _sum(1000)
    assert len(expression) == 1000
    assert extract_expression(f"what is {expression}?") == expression
    too_long = _sum(1001)
    assert len(too_long) == 1001
    assert extract_expression(f"what is {too_long} and 3*4?") == "3*4"


def test_extraction_checks_at_most_2000_characters_of_candidates():
    malformed, expression = _malformed(1000), _sum(1000)
    assert len(malformed) == len(expression) == 1000
    assert extract_expression(f"{malformed} and {expression}") == expression
    many = " and ".join([_malformed(900)] * 3)
    assert extract_expression(f"{many} and 3*4") is None


def test_an_unreadable_candidate_is_returned_when_the_check_stops():
    unreadable = "12:30" + _sum(995, first="+")
    assert len(unreadable) == 1000
    malformed = _malformed(999)
    text = f"{unreadable} and {malformed} and {malformed} and 3*4"
    assert extract_expression(text) == unreadable


@pytest.mark.parametrize(
    ("expression", "answer"),
    [
        ("", "Error: empty expression"),
        ("   ", "Error: empty expression"),
        ("2 +", "Error: expression ends too early"),
        ("(", "Error: expression ends too early"),
        ("(1+2", "Error: missing closing parenthesis"),
        ("(-8)^(1/3)", "Error: a negative number cannot be raised to a fractional power"),
        ("1 + )", "Error: unexpected ')'"),
        ("3 4", "Error: unexpected '4'"),
        ("(2)(3)", "Error: unexpected '('"),
        ("1e999999999", "Error: exponent in '1e999999999' is too large"),
        ("1e-999999999", "Error: exponent in '1e-999999999' is too large"),
        ("1.5.2 + 1", "Error: '1.5.2' is not a number the calculator can read"),
        ("0^-1", "Error: zero cannot be raised to a negative power"),
        ("0^0", "1"),
        ("0^2", "0"),
        ("(-2)^3", "-8"),
        ("2^-2", "0.25"),
    ],
)
def test_each_refusal_and_edge_reads_exactly_as_the_user_sees_it(expression, answer):
    # The whole text, not a part of it: a refusal is shown to the user as it is.
    assert calculate(expression) == answer
