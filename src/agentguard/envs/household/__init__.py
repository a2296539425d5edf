"""A SafeAgentBench-style symbolic household: simulator, hazards, replay of recorded runs, agent loop.

The data folder (AI2-THOR metadata, recorded runs) is always passed in (``data_dir``); without it the
simulator uses an embedded table of object types. Commands resolve it with
:func:`agentguard.envs.data.data_dir`.
"""

from .actions import VERBS, parse_action
from .loop import EpisodeResult, ReplayClient, run_episode
from .replay import load_runs, replay_all, replay_run
from .scene import build_scene
from .sim import HouseholdSim

__all__ = [
    "EpisodeResult",
    "HouseholdSim",
    "ReplayClient",
    "VERBS",
    "build_scene",
    "load_runs",
    "parse_action",
    "replay_all",
    "replay_run",
    "run_episode",
]
