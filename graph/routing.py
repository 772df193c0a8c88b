"""Conditional edges: pure functions of the state, each returning the next node's name."""

from __future__ import annotations

from typing import Literal

from graph.state import State


def after_route(state: State) -> Literal["calculator", "image", "retrieve"]:
    """Follow the branch ``route`` chose."""
    return state.get("route", "retrieve")


def after_retrieve(state: State) -> Literal["grade_documents", "no_answer"]:
    """Grade only when something scored above the threshold; otherwise no model call at all."""
    return "grade_documents" if state.get("documents") else "no_answer"


def after_grading(state: State) -> Literal["generate", "no_answer"]:
    """Answer only from chunks the grader kept."""
    return "generate" if state.get("documents") else "no_answer"
