"""Agentic Driving (ReGuard paper, section 5 and Appendix A) as a package.

- :mod:`.dynamics` -- the car, its failure margin, text observations and base policies; everything it
  defines is re-exported here, so ``from agentguard.envs import driving as D; D.step(...)`` works;
- :mod:`.value_iteration` -- the exact grid value iteration (the *Privileged* ideal) and its validation;
- :mod:`.encoders` -- the driving latents (:class:`~.encoders.DrivingNumbersEncoder`,
  :class:`~.encoders.StateEncoder`);
- :mod:`.guard` -- training data, DDQN training and :func:`~.guard.make_filter` for the driving filters.

Only :mod:`.dynamics` is imported here (numpy only); the other modules load on demand.
"""

from .dynamics import (
    ACTIONS,
    ACTION_TEXT,
    DT,
    GOAL_X,
    HORIZON,
    METERS_PER_UNIT,
    OBSTACLES,
    RADIUS,
    ROAD_WIDTH,
    START_BOX,
    STEER,
    SYSTEM_PROMPT,
    U_MAX,
    V,
    DrivingEnv,
    PolicyFn,
    goal_reached,
    margin,
    observation_text,
    obstacle_distances,
    parse_action,
    parse_observation,
    prompt_messages,
    question_text,
    random_policy,
    sample_initial_states,
    state_from_observation,
    step,
    weak_driver_policy,
    wrap_angle,
)

__all__ = [
    "ACTIONS",
    "ACTION_TEXT",
    "DT",
    "DrivingEnv",
    "GOAL_X",
    "HORIZON",
    "METERS_PER_UNIT",
    "OBSTACLES",
    "PolicyFn",
    "RADIUS",
    "ROAD_WIDTH",
    "START_BOX",
    "STEER",
    "SYSTEM_PROMPT",
    "U_MAX",
    "V",
    "goal_reached",
    "margin",
    "observation_text",
    "obstacle_distances",
    "parse_action",
    "parse_observation",
    "prompt_messages",
    "question_text",
    "random_policy",
    "sample_initial_states",
    "state_from_observation",
    "step",
    "weak_driver_policy",
    "wrap_angle",
]
