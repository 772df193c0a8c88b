"""``calculator``: exact arithmetic without a model, also offered as a LangChain tool."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from graph.arithmetic import calculate, extract_expression, is_complete_expression
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
        "decimals and scientific notation. Returns the result, or 'Error: <reason>'."
    )
    args_schema: type[BaseModel] = CalculatorInput

    def _run(self, expression: str, **_: object) -> str:
        return calculate(expression)


def find_expression(text: str, context: Context) -> tuple[str, str]:
    """The expression in ``text`` and how it was found; the model is asked only as a last resort."""
    stripped = text.strip().rstrip("=?").strip()
    if is_complete_expression(stripped):
        return stripped, "as given"
    found = extract_expression(text)
    if found:
        return found, "extracted"
    reply = ask(context, "extract", EXTRACT_EXPRESSION.format(prompt=text))
    return (extract_expression(reply) or reply.strip("` \n")), "rewritten by the model"


def calculator(state: State, runtime: Runtime[Context]) -> RunState:
    """Evaluate the question's arithmetic and answer with the exact result."""
    report("calculating")
    expression, how = find_expression(working_question(state), runtime.context)
    result = calculate(expression) if expression else "Error: no arithmetic expression found"
    answer = result if result.startswith("Error:") else f"{expression} = {result}"
    return {
        "expression": expression,
        "answer": answer,
        "messages": [AIMessage(answer)],
        "steps": [f"calculator: {expression or '?'} ({how}) -> {result}"],
    }
