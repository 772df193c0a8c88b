"""``calculator``: exact arithmetic without a model, also offered as a LangChain tool."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from graph.arithmetic import (
    calculate,
    extract_expression,
    is_arithmetic_only,
    is_complete_expression,
)
from graph.context import Context
from graph.llm import ask
from graph.progress import report
from graph.prompts import EXTRACT_EXPRESSION
from graph.state import RunState, State, working_question


class CalculatorInput(BaseModel):
    """Arguments of the calculator tool."""

    expression: str = Field(description="Arithmetic expression, e.g. 456*4343 - 56/(443-11+4)")


class Calculator(BaseTool):
    """Exact rational arithmetic; never raises, invalid input returns ``Error: ...``."""

    name: str = "calculator"
    description: str = (
        "Evaluate an arithmetic expression exactly. Supports + - * / ^ ** parentheses, "
        "decimals (1.5, 1,234.5) and scientific notation. Returns the exact result, a rounded "
        "one prefixed with '≈', or 'Error: <reason>'."
    )
    args_schema: type[BaseModel] = CalculatorInput

    def _run(self, expression: str, **_: object) -> str:
        return calculate(expression)


#: How ``find_expression`` found the expression it returns.
AS_GIVEN, EXTRACTED, REWRITTEN = "as given", "extracted", "rewritten by the model"


def find_expression(text: str, context: Context) -> tuple[str, str]:
    """The expression in ``text`` and how it was found (``""`` when there is none).

    Text that is already an expression is used as it is, even when it has no value (``1/0``)
    or is malformed (``2 +``): its error is the answer. An expression inside a sentence is
    taken out without a model. Only text with no expression in it (words: ``the sum of three
    and four``) is rewritten by the model, and only a well-formed expression of its reply is
    used.
    """
    stripped = text.strip().rstrip("=?").strip()
    if is_complete_expression(stripped) or is_arithmetic_only(stripped):
        return stripped, AS_GIVEN
    found = extract_expression(text)
    if found:
        return found, EXTRACTED
    reply = ask(context, "extract", EXTRACT_EXPRESSION.format(prompt=text)).strip("` \n")
    whole = reply.rstrip("=?").strip()
    rewritten = whole if is_complete_expression(whole) else extract_expression(reply)
    return rewritten or "", REWRITTEN


def calculator_answer(expression: str, how: str) -> tuple[str, str]:
    """The answer to show and the result (or ``Error: ...``) for the step trace.

    Only a number the calculator computed is ever shown after ``=``, and only when it is the
    exact value: a rounded one follows ``≈`` (``1/3 ≈ 0.333333333333333``). The expression is
    shown as it was asked; an expression the model wrote is marked as its reading.
    """
    if not expression:
        result = "Error: no arithmetic expression found"
        return f"{result} (the question has no numbers and operators to compute)", result
    result = calculate(expression)
    note = " (the expression is the model's reading of the question)" if how == REWRITTEN else ""
    if result.startswith("Error:"):
        reason = result.removeprefix("Error:").strip()
        return f"Error: {expression} cannot be computed: {reason}{note}", result
    if result.startswith("≈"):
        return f"{expression} ≈ {result.removeprefix('≈')}{note}", result
    return f"{expression} = {result}{note}", result


def calculator(state: State, runtime: Runtime[Context]) -> RunState:
    """Evaluate the question's arithmetic and answer with the exact result or why there is none."""
    report("calculating")
    expression, how = find_expression(working_question(state), runtime.context)
    answer, result = calculator_answer(expression, how)
    return {
        "expression": expression,
        "answer": answer,
        "messages": [AIMessage(answer)],
        "steps": [f"calculator: {expression or '?'} ({how}) -> {result}"],
    }
