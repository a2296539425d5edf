"""Proactive prediction (Pro2Guard): DTMC learning, PAC stopping rule, model checking, runtime guard."""

from .dtmc import DTMC

__all__ = ["DTMC"]
