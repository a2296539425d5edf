"""A ReAct-style agent loop that drives the household simulator from any LLM client."""

from .loop import EpisodeResult, ReplayClient, run_episode

__all__ = ["EpisodeResult", "ReplayClient", "run_episode"]
