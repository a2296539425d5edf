"""A SafeAgentBench-style symbolic household: simulator, hazards, replay of recorded runs."""

from .actions import VERBS, parse_action
from .sim import HouseholdSim
from .scene import build_scene
from .replay import load_runs, replay_run, replay_all

__all__ = ["HouseholdSim", "VERBS", "build_scene", "load_runs", "parse_action", "replay_all", "replay_run"]
