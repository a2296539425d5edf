"""A symbolic household simulator with the SafeAgentBench low-level controller's semantics.

It keeps the AI2-THOR object state that the low-level actions change (open, toggled, broken, sliced,
cooked, dirty, filled with liquid, picked up, inside/on) plus what the hazards need and AI2-THOR does
not track (liquid spilled on the floor or poured onto an object, thrown objects, how often an object
was toggled). :meth:`HouseholdSim.step` takes the same instruction text as the real controller and
returns the same dictionary ``{action, success, message, errorMessage}``, with the controller's
message strings (``Cannot find X``, ``Nothing Done. Robot is not holding any object``,
``Turn on action failed``, ...). It never raises on bad input: an unknown verb or object is a failed
action with a message.

What it does not model: geometry. The real controller can fail to teleport (``Cannot move to X``) or
to pick/put/open because of collisions and camera angles; those failures are physical noise. The
simulator can be told to inject such a failure (``step(text, force_failure=message)``), which is how
recorded runs are replayed (see :mod:`.replay`).

Semantics rules taken from the controller and AI2-THOR (and checked against the 1,111 recorded runs):
objects inside a closed openable receptacle cannot be found by name; open/toggle/break/dirty/clean/
slice/cook/fill/empty need the object within reach (the robot went to it, it is in/on what the robot
went to, or it is held), close does not (forceAction); ``pick`` of an object that is not
visible (not where the robot is) and sits in a receptacle fails with ``X is not visible because it is
in R``; a microwave cannot be turned on while open; toggling fails if the object is already in that
state; cleaning needs a dirty object, emptying a filled one; ``fillLiquid`` accepts water, coffee, wine.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ...core.errors import InputError
from .actions import LIQUIDS, VERBS, ParsedAction, parse_action
from .objects import TypeInfo, type_table

__all__ = ["HouseholdSim", "NOT_HOLDING", "Obj"]

NOT_HOLDING = "Nothing Done. Robot is not holding any object"
#: Receptacles a liquid can be poured into without spilling.
LIQUID_SINKS = frozenset({"Sink", "SinkBasin", "Bathtub", "BathtubBasin", "Toilet", "HousePlant"})
#: Receptacles in which a stove burner's heat is the point (cookware).
COOKWARE = frozenset({"Pot", "Pan", "Kettle"})
#: Inherited sub-objects (AI2-THOR ids ``Sink|x|y|z|SinkBasin``): parent type -> child type.
INHERITED = {"Sink": "SinkBasin", "Bathtub": "BathtubBasin"}


@dataclass
class Obj:
    """One object instance; the boolean fields mirror AI2-THOR's metadata keys."""

    id: str
    type: str
    info: TypeInfo
    parent: str | None = None  # id of the receptacle it is in/on
    isOpen: bool = False
    isToggled: bool = False
    isBroken: bool = False
    isSliced: bool = False
    isCooked: bool = False
    isDirty: bool = False
    isFilledWithLiquid: bool = False
    fillLiquid: str | None = None
    isPickedUp: bool = False
    # not in AI2-THOR; needed by the hazard predicates
    isWet: bool = False  # liquid poured / spilled onto it
    wetLiquid: str | None = None
    isThrown: bool = False
    toggles: int = 0
    inherited: bool = False  # a basin (SinkBasin, BathtubBasin)

    def to_dict(self, objects: Mapping[str, "Obj"]) -> dict[str, Any]:
        p = objects.get(self.parent) if self.parent else None
        return {
            "objectId": self.id, "objectType": self.type,
            "parentReceptacles": [self.parent] if self.parent else [],
            "parentType": p.type if p else None,
            "isOpen": self.isOpen, "isToggled": self.isToggled, "isBroken": self.isBroken,
            "isSliced": self.isSliced, "isCooked": self.isCooked, "isDirty": self.isDirty,
            "isFilledWithLiquid": self.isFilledWithLiquid, "fillLiquid": self.fillLiquid,
            "isPickedUp": self.isPickedUp, "isWet": self.isWet, "isThrown": self.isThrown,
            "toggles": self.toggles,
        }


@dataclass
class HouseholdSim:
    """The simulator. Build it with :meth:`from_types` or :func:`.scene.build_scene`.

    ``objects`` maps object id to :class:`Obj` in insertion order (the order the controller would meet
    them, nearest first). ``held`` is the id in the robot's hand, ``at`` the object last navigated to.
    """

    objects: dict[str, Obj] = field(default_factory=dict)
    held: str | None = None
    at: str | None = None
    floor_wet: bool = False
    floor_liquid: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    scene_name: str = ""
    instruction: str = ""
    types: dict[str, TypeInfo] = field(default_factory=dict, repr=False)

    # --- construction ---------------------------------------------------------------------------
    @classmethod
    def from_types(cls, type_names: Iterable[str], scene_name: str = "", data_dir: str | None = None,
                   placements: Mapping[str, str] | None = None) -> "HouseholdSim":
        """A scene with one instance of each named type, placed in its usual receptacle when present.

        ``placements`` overrides where a type starts (type -> receptacle type). Unknown type names are
        kept as plain objects with no affordances (AI2-THOR would not have them; the controller still
        finds them by name). Duplicates create more instances (``Cabinet``, ``Cabinet``).
        """
        types, _, _ = type_table(data_dir)
        sim = cls(scene_name=scene_name, types=types)
        for name in type_names:
            sim.add(name)
        placements = dict(placements or {})
        by_type: dict[str, str] = {}
        for o in sim.objects.values():
            by_type.setdefault(o.type, o.id)
        for o in list(sim.objects.values()):
            if o.inherited:
                continue
            want = placements.get(o.type, o.info.default_parent if o.info.pickupable else None)
            if want and want in by_type and by_type[want] != o.id:
                o.parent = by_type[want]
        return sim

    def add(self, type_name: str, parent: str | None = None) -> Obj:
        """Add one instance of ``type_name`` (and its basin for Sink/Bathtub); returns it."""
        if not isinstance(type_name, str) or not type_name.strip():
            raise InputError(f"object type must be a non-empty string, got {type_name!r}")
        info = self.types.get(type_name) or TypeInfo(type_name)
        k = sum(1 for o in self.objects.values() if o.type == type_name and not o.inherited) + 1
        oid = f"{type_name}|{k}"
        o = Obj(oid, type_name, info, parent, isToggled=info.isToggled, isOpen=info.isOpen)
        self.objects[oid] = o
        if type_name in INHERITED:
            child = INHERITED[type_name]
            cinfo = self.types.get(child) or TypeInfo(child, receptacle=True)
            # AI2-THOR names the basin Sink|...|SinkBasin: its id starts with the parent's type
            self.objects[f"{oid}|{child}"] = Obj(f"{oid}|{child}", child, cinfo, None, inherited=True)
        return o

    def copy(self) -> "HouseholdSim":
        """An independent copy (object states copied, type metadata shared)."""
        new = copy.copy(self)
        new.objects = {k: copy.copy(o) for k, o in self.objects.items()}
        new.history = list(self.history)
        return new

    # --- queries --------------------------------------------------------------------------------
    def _closed_in(self, o: Obj) -> bool:
        p = self.objects.get(o.parent) if o.parent else None
        return bool(p and p.info.openable and not p.isOpen)

    def resolve(self, name: str, num: int | None = None, inherited: bool = False,
                exclude: Iterable[str] = ()) -> Obj | None:
        """The controller's ``get_obj_id_from_name``: match the id's first field case-insensitively.

        Objects inside closed openable receptacles are skipped; for StoveBurner/Toaster an empty one
        is preferred; ``inherited=True`` matches only basins; ``num`` picks the num-th instance.
        """
        if not name:
            return None
        key = name.casefold()
        excl = set(exclude)
        cands = [o for o in self.objects.values()
                 if o.id.split("|")[0].casefold() == key and o.id not in excl and o.inherited == inherited
                 and not self._closed_in(o)]
        if num is not None:
            if num < 1 or num > len(cands):
                return None
            return cands[num - 1]
        if not cands:
            return None
        if key in ("stoveburner", "toaster"):
            empty = [o for o in cands if not self.contents(o.id)]
            if empty:
                return empty[0]
        vis = [o for o in cands if self.visible(o)]
        return (vis or cands)[0]

    def contents(self, oid: str) -> list[Obj]:
        return [o for o in self.objects.values() if o.parent == oid]

    def visible(self, o: Obj) -> bool:
        """Within reach of the robot: the object it went to, what is in/on it, or what holds it."""
        if o.id == self.held:
            return True
        at = self.objects.get(self.at) if self.at else None
        if at is None:
            return False
        if o.id == at.id or o.parent == at.id or at.parent == o.id:
            return not (o.parent == at.id and at.info.openable and not at.isOpen)
        if at.inherited and at.id.startswith(o.id + "|"):
            return True
        if o.inherited and o.id.startswith(at.id + "|"):
            return True
        return False

    def heat_on(self, o: Obj) -> bool:
        """Is this heat source heating? Stove burners are on while a stove knob is on."""
        if o.type == "StoveBurner":
            return any(k.type == "StoveKnob" and k.isToggled for k in self.objects.values())
        return o.info.isHeatSource and o.isToggled

    # --- the step function ----------------------------------------------------------------------
    def step(self, text: str, force_failure: str | None = None) -> dict[str, Any]:
        """Execute one low-level instruction; the controller's result dictionary.

        ``force_failure``: make the action fail with this message without changing the state (used to
        replay physical failures the simulator cannot predict, such as ``Cannot move to Mug``).
        """
        p = parse_action(text)
        if force_failure is not None:
            msg = str(force_failure) or "action failed"
            res = {"action": p.text, "success": False, "message": msg, "errorMessage": msg, "forced": True}
        elif not p.ok:
            res = {"action": p.text, "success": False, "message": p.error, "errorMessage": p.error}
        else:
            try:
                msg, err = self._do(p)
            except Exception as exc:  # the loop must never crash on a simulator bug
                msg, err = f"Simulator error: {type(exc).__name__}: {exc}", str(exc)
            res = {"action": p.text, "success": len(msg) <= 0, "message": msg,
                   "errorMessage": msg if "Nothing Done. " in msg else err}
        self.history.append(res)
        return res

    def _do(self, p: ParsedAction) -> tuple[str, str]:
        """Run one parsed action: ``(failure message, note)``, both empty on plain success."""
        v = p.verb
        if v == "find":
            return self._find(p)
        if v == "pick":
            return self._pick(p)
        if v in ("drop", "throw", "pour"):
            return self._release(v)
        if v == "put":
            return self._put(p)
        if v == "fillLiquid":
            return self._fill(p)
        return self._change(p)

    def _find(self, p: ParsedAction) -> tuple[str, str]:
        o = self.resolve(p.obj, p.num)
        if o is None:
            return f"Cannot find {p.obj}", ""
        self.at = o.id
        return "", ""

    def _pick(self, p: ParsedAction) -> tuple[str, str]:
        o = self.resolve(p.obj, p.num)
        if o is None:
            return f"Nothing Done. Cannot find {p.obj} to pick up", ""
        if not self.visible(o) and o.parent is not None:
            return f"{p.obj} is not visible because it is in {o.parent.split('|')[0]}", ""
        # The controller reports success here even when AI2-THOR's PickupObject fails (its
        # failure branch tests j == 16 inside range(16)); the state changes only if the pickup is
        # possible: hand empty and object pickupable (the recordings show pickups succeeding
        # from wherever the robot stands once the visibility message above did not apply).
        if self.held is None and o.info.pickupable:
            o.parent, o.isPickedUp, self.held = None, True, o.id
            return "", ""
        why = "hand is full" if self.held is not None else "not pickupable"
        return "", f"PickupObject failed silently ({why})"

    def _release(self, v: str) -> tuple[str, str]:  # drop, throw or pour what the robot holds
        if self.held is None:
            return NOT_HOLDING, ""
        h = self.objects[self.held]
        if v == "pour":
            if h.isFilledWithLiquid:
                self._spill(h.fillLiquid, self.objects.get(self.at) if self.at else None, source=h)
                h.isFilledWithLiquid, h.fillLiquid = False, None
            return "", ""
        self.held, h.isPickedUp = None, False
        floor = self.resolve("Floor")
        h.parent = floor.id if floor else None
        if v == "throw":
            h.isThrown = True
            if h.info.breakable:
                h.isBroken = True
        elif h.info.breakable and (h.type == "Egg" or {"Glass", "Ceramic"} & set(h.info.materials)):
            h.isBroken = True
        if h.isFilledWithLiquid:
            self._spill(h.fillLiquid, None, source=h)
            h.isFilledWithLiquid, h.fillLiquid = False, None
        return "", ""

    def _fill(self, p: ParsedAction) -> tuple[str, str]:
        o = self.resolve(p.obj, p.num)
        if o is None:
            return f"Cannot find {p.obj} to fill", ""
        if not self.visible(o):
            return "FillLiquid action failed", f"{o.id} is not visible/interactable (find it first)"
        if p.liquid not in LIQUIDS or not o.info.canFillWithLiquid or o.isBroken:
            return "FillLiquid action failed", f"cannot fill {o.id} with {p.liquid}"
        o.isFilledWithLiquid, o.fillLiquid = True, p.liquid
        return "", ""

    def _change(self, p: ParsedAction) -> tuple[str, str]:
        """Single-object state changes (open, close, turn on/off, slice, break, cook, dirty, clean, empty)."""
        v = p.verb
        verb_word = {"turn on": "turn on", "turn off": "turn off", "emptyLiquid": "empty"}.get(v, v)
        o = self.resolve(p.obj, p.num)
        if o is None:
            return f"Cannot find {p.obj} to {verb_word}", ""
        fail = v[0].upper() + v[1:] + " action failed"  # "Turn on action failed", "EmptyLiquid action failed"
        i = o.info
        # AI2-THOR needs the object visible and in reach for these actions (no forceAction), except
        # CloseObject, which the controller calls with forceAction=True
        if v != "close" and not self.visible(o):
            return fail, f"{o.id} is not visible/interactable (find it first)"
        if v in ("open", "close"):
            if not i.openable:
                return fail, f"{o.id} is not openable"
            o.isOpen = v == "open"
        elif v in ("turn on", "turn off"):
            return self._toggle(o, v == "turn on", fail)
        elif v == "slice":
            if not i.sliceable or o.isSliced or o.id == self.held:
                return fail, f"{o.id} cannot be sliced"
            o.isSliced = True
        elif v == "break":
            if not i.breakable or o.isBroken:
                return fail, f"{o.id} cannot be broken"
            o.isBroken = True
            if o.isFilledWithLiquid:
                self._spill(o.fillLiquid, None, source=o)
                o.isFilledWithLiquid, o.fillLiquid = False, None
        elif v == "cook":
            if not i.cookable or o.isCooked:
                return fail, f"{o.id} cannot be cooked"
            o.isCooked = True
        elif v == "dirty":
            if not i.dirtyable or o.isDirty:
                return fail, f"{o.id} cannot be made dirty"
            o.isDirty = True
        elif v == "clean":
            if not i.dirtyable or not o.isDirty:
                return fail, f"{o.id} is not dirty"
            o.isDirty = False
        elif v == "emptyLiquid":
            if not o.isFilledWithLiquid:
                return fail, f"{o.id} is not filled"
            o.isFilledWithLiquid, o.fillLiquid = False, None
        return "", ""

    def _toggle(self, o: Obj, on: bool, fail: str) -> tuple[str, str]:
        if not o.info.toggleable:
            return fail, f"{o.id} is not toggleable"
        if o.isToggled == on:
            return fail, f"{o.id} is already {'on' if on else 'off'}"
        if on and o.type == "Microwave" and o.isOpen:
            return fail, "the microwave cannot be turned on while its door is open"
        if o.isBroken:
            return fail, f"{o.id} is broken"
        o.isToggled = on
        o.toggles += 1
        if on and o.type == "Faucet":  # running water fills what is in the sink
            for b in self.objects.values():
                if b.inherited and b.type == "SinkBasin":
                    for c in self.contents(b.id):
                        if c.info.canFillWithLiquid and not c.isBroken:
                            c.isFilledWithLiquid, c.fillLiquid = True, "water"
                        elif c.info.electrical:
                            c.isWet, c.wetLiquid = True, "water"
        return "", ""

    def _put(self, p: ParsedAction) -> tuple[str, str]:
        if self.held is None:
            return NOT_HOLDING, ""
        h = self.objects[self.held]
        tried: list[str] = []
        last: Obj | None = None
        for inherited in (False, True):
            while True:
                r = self.resolve(p.obj, p.num, inherited=inherited, exclude=tried)
                if r is None:
                    break
                tried.append(r.id)
                last = r
                if r.id == h.id or not r.info.receptacle or (r.info.openable and not r.isOpen):
                    if p.num is not None:
                        break
                    continue
                h.parent, h.isPickedUp, self.held = r.id, False, None
                if r.isFilledWithLiquid and h.info.electrical:
                    h.isWet, h.wetLiquid = True, r.fillLiquid
                if h.isFilledWithLiquid and r.type in ("Floor",):
                    pass
                return "", ""
        # The controller's last attempt looks for an inherited receptacle (a basin); when there is none
        # its message is overwritten by "Cannot find R <num>", so a failed put into an existing but
        # unsuitable receptacle reads exactly like a missing one.
        if last is not None and any(self.resolve(p.obj, p.num, inherited=True, exclude=()) for _ in (0,)):
            return f"Putting the object on {p.obj} failed", f"cannot place {h.id} in {last.id}"
        return f"Cannot find {p.obj} {p.num}", (f"cannot place {h.id} in {last.id}" if last else "")

    def _spill(self, liquid: str | None, target: Obj | None, source: Obj) -> None:
        """Liquid leaves ``source``: into a fillable target, down a sink, or onto the target/floor."""
        liquid = liquid or "water"
        if target is not None and target.id != source.id:
            if target.type in LIQUID_SINKS or target.inherited:
                return
            if target.info.canFillWithLiquid and not target.isBroken:
                target.isFilledWithLiquid, target.fillLiquid = True, liquid
                return
            if target.type != "Floor":
                target.isWet, target.wetLiquid = True, liquid
                for c in self.contents(target.id):  # liquid poured into a drawer / garbage can / safe
                    c.isWet, c.wetLiquid = True, liquid
                return
        self.floor_wet, self.floor_liquid = True, liquid

    # --- state ----------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The concrete state: AI2-THOR-style object list plus the robot and the floor."""
        held = self.objects.get(self.held) if self.held else None
        at = self.objects.get(self.at) if self.at else None
        return {
            "objects": [o.to_dict(self.objects) for o in self.objects.values()],
            "held": held.id if held else None, "heldType": held.type if held else None,
            "at": at.id if at else None, "atType": at.type if at else None,
            "floorWet": self.floor_wet, "floorLiquid": self.floor_liquid,
            "heatOn": sorted(o.id for o in self.objects.values() if self.heat_on(o)),
            "scene": self.scene_name, "instruction": self.instruction,
        }

    def task_actions(self, instruction: str) -> list[str]:
        """A short candidate list for a scoring policy: actions on the objects the instruction names,
        on the object the robot is at and the one it holds, ``put`` into named receptacles, and the
        hand actions (drop, throw, pour) when holding something."""
        low = instruction.lower().replace(" ", "")
        named = {o.type for o in self.objects.values() if not o.inherited and o.type.lower() in low}
        near = {self.at, self.held}
        acts: list[str] = []
        for a in self.valid_actions():
            words = a.split()
            obj = words[-1] if words[0] not in ("fillLiquid",) else words[1]
            if a in ("drop", "throw", "pour"):
                acts.append(a)
            elif obj in named or any(o and self.objects[o].type == obj for o in near):
                acts.append(a)
        return acts

    def valid_actions(self, focused: bool = False) -> list[str]:
        """Instructions that would be understood here (not necessarily succeed), for scoring policies.

        ``focused=True`` keeps the list short for a scoring policy: ``find`` any object, interact only
        with the object the robot is at (and what is in/on it) or holds, ``put`` into any receptacle.
        """
        acts: list[str] = []
        seen: set[str] = set()
        near = {self.at, self.held} | {o.id for o in self.objects.values() if self.at and o.parent == self.at}
        for o in self.objects.values():
            if o.inherited or o.type in seen:
                continue
            seen.add(o.type)
            i, t = o.info, o.type
            if focused and o.id not in near:
                acts.append(f"find {t}")
                if i.receptacle and self.held is not None:
                    acts.append(f"put {t}")
                continue
            acts.append(f"find {t}")
            if i.pickupable and self.held is None:
                acts.append(f"pick {t}")
            if i.receptacle and self.held is not None:
                acts.append(f"put {t}")
            if i.openable:
                acts.append(f"{'close' if o.isOpen else 'open'} {t}")
            if i.toggleable:
                acts.append(f"turn {'off' if o.isToggled else 'on'} {t}")
            if i.sliceable and not o.isSliced:
                acts.append(f"slice {t}")
            if i.breakable and not o.isBroken:
                acts.append(f"break {t}")
            if i.cookable and not o.isCooked:
                acts.append(f"cook {t}")
            if i.dirtyable:
                acts.append(f"{'clean' if o.isDirty else 'dirty'} {t}")
            if i.canFillWithLiquid:
                acts.append(f"emptyLiquid {t}" if o.isFilledWithLiquid else f"fillLiquid {t} water")
        if self.held is not None:
            acts += ["drop", "throw", "pour"]
        return acts

    def describe(self) -> str:
        """A short text observation for an LLM prompt."""
        held = self.objects[self.held].type if self.held else "nothing"
        at = self.objects[self.at].type if self.at else "the room entrance"
        return f"You are at {at}, holding {held}. Objects here: " + ", ".join(
            sorted({o.type for o in self.objects.values() if not o.inherited}))


VERB_LIST = VERBS
