"""Scene building: which objects a SafeAgentBench task's AI2-THOR floor plan holds.

The recorded runs do not contain the floor plans' object lists, so a scene is built from what a run
tells about it: the task's ``input.objects``, the types in its goal (``final_state``, including goal
receptacles), the objects its reference plan (``input.step``) names, the scene notes of
``ai2thor_object_meta.json`` and the usual fixtures of the room kind (kitchens are FloorPlan1-30,
living rooms 201-230, bedrooms 301-330, bathrooms 401-430). Each pickupable object starts in its
usual AI2-THOR receptacle (``Egg`` in ``Fridge``, ``Fork`` in ``Drawer``) when that receptacle is
there. When replaying a recording, :func:`build_scene` is also given the recording's evidence (what
was found, what could not be found) so the scene agrees with it; see :mod:`.replay`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ...core.errors import InputError
from .actions import parse_action
from .objects import type_table
from .sim import HouseholdSim

__all__ = ["ROOM_FIXTURES", "build_scene", "room_kind", "task_types"]

ROOM_FIXTURES = {
    "kitchen": ["Floor", "CounterTop", "Cabinet", "Drawer", "Sink", "Faucet", "StoveBurner", "StoveKnob", "Fridge",
                "Microwave", "GarbageCan", "LightSwitch", "Window"],
    "living": ["Floor", "Sofa", "CoffeeTable", "SideTable", "Drawer", "Television", "TVStand", "LightSwitch",
               "FloorLamp", "Window", "GarbageCan", "Shelf"],
    "bedroom": ["Floor", "Bed", "Desk", "Drawer", "DeskLamp", "LightSwitch", "GarbageCan", "Shelf", "Window",
                "SideTable"],
    "bathroom": ["Floor", "Toilet", "Sink", "Faucet", "Bathtub", "Mirror", "TowelHolder", "LightSwitch",
                 "GarbageCan", "Cabinet", "CounterTop", "ShowerHead"],
}


def room_kind(scene_name: str) -> str:
    """``FloorPlan12 -> kitchen``, ``FloorPlan2xx -> living``, ``3xx -> bedroom``, ``4xx -> bathroom``."""
    m = re.search(r"(\d+)", scene_name or "")
    n = int(m.group(1)) if m else 1
    return {0: "kitchen", 2: "living", 3: "bedroom", 4: "bathroom"}.get(n // 100, "kitchen")


def canonical_type(name: str, known: Mapping[str, Any]) -> str | None:
    """The AI2-THOR type spelled ``name`` in any case (``Wateringcan -> WateringCan``), or None."""
    if not name:
        return None
    low = name.casefold()
    for t in known:
        if t.casefold() == low:
            return t
    return None


def task_types(task: Mapping[str, Any], known: Mapping[str, Any]) -> list[str]:
    """Object types a task mentions: ``objects``, goal types and receptacles, reference-plan objects."""
    out: list[str] = []
    for o in task.get("objects") or []:
        if isinstance(o, str):
            out.append(o)
    for g in task.get("final_state") or []:
        if isinstance(g, Mapping):
            if isinstance(g.get("objectType"), str):
                out.append(g["objectType"])
            for r in g.get("parentReceptacles") or []:
                if isinstance(r, str):
                    out.append(r)
    for s in task.get("step") or []:
        p = parse_action(str(s))
        if p.ok and p.obj:
            out.append(p.obj)
    res = []
    for n in out:
        t = canonical_type(n, known)
        if t and t not in res:
            res.append(t)
    return res


def build_scene(task: Mapping[str, Any], *, data_dir: str | None = None, extra: Iterable[str] = (),
                absent: Iterable[str] = (), inside: Mapping[str, str] | None = None,
                fixtures: bool = True) -> HouseholdSim:
    """A simulator for a task (a run's ``input``).

    ``extra``: more types known to be there; ``absent``: types known not to be findable at the start
    (they are left out); ``inside``: type -> closed receptacle type it starts in.
    """
    if not isinstance(task, Mapping):
        raise InputError(f"a task must be an object with scene_name/instruction, got {type(task).__name__}")
    types, scenes, _ = type_table(data_dir)
    scene_name = str(task.get("scene_name") or "FloorPlan1")
    names: list[str] = []
    note = scenes.get(scene_name) or {}
    names += [t for t in note.get("objectTypes", []) if isinstance(t, str)]
    names += [t for t in note.get("parentReceptacles", []) if isinstance(t, str)]
    names += task_types(task, types)
    for e in extra:
        t = canonical_type(e, types)
        if t:
            names.append(t)
    if fixtures:
        names += ROOM_FIXTURES[room_kind(scene_name)]
    gone = {a.casefold() for a in absent}
    inside = dict(inside or {})
    uniq: list[str] = []
    for n in names:
        if n not in uniq and n.casefold() not in gone and types.get(n) is not None:
            uniq.append(n)
    for n in inside.values():
        if n not in uniq and types.get(n) is not None:
            uniq.append(n)
    # receptacles first so objects can be placed in them; the floor last among fixtures is fine
    sim = HouseholdSim.from_types(uniq, scene_name=scene_name, data_dir=data_dir, placements=inside)
    sim.instruction = str(task.get("instruction") or "")
    return sim
