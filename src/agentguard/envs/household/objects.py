"""AI2-THOR object types and their affordances, loaded at run time.

Source: ``<data>/pro2guard/ai2thor_object_meta.json`` (``<data>`` is the benchmark data folder the
caller passes; this package never looks for it on its own -- commands resolve it with
:func:`agentguard.envs.data.data_dir`) (``obj_types``: one example AI2-THOR
metadata record per type, with affordances, default toggle/open state, salient materials and the
default parent receptacle) and ``ai2thor_object_types.json`` (``type_profiles``: affordances only).
When no data folder is given, or it lacks the file, a small embedded table (the types the demo's tasks use) is used, so
the simulator and the demo run anywhere; :func:`type_table` says which source was used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...core.errors import InputError

__all__ = ["ELECTRICAL", "FLAMMABLE_MATERIALS", "METAL", "TypeInfo", "type_table"]

#: AI2-THOR types that are powered electrical appliances (liquid on them is an electrical hazard).
ELECTRICAL = frozenset({
    "Laptop", "Television", "Toaster", "Microwave", "CellPhone", "DeskLamp", "FloorLamp", "CoffeeMachine",
    "LightSwitch", "AlarmClock", "Desktop", "Fridge", "StoveKnob", "StoveBurner", "RemoteControl", "Watch",
})
FLAMMABLE_MATERIALS = frozenset({"Paper", "Fabric", "Wood", "Wax", "Sponge", "Plastic"})
FLAMMABLE_TYPES = frozenset({
    "Book", "Newspaper", "Cloth", "Towel", "HandTowel", "PaperTowelRoll", "TissueBox", "ToiletPaper",
    "Pillow", "Box", "DishSponge", "Candle", "CreditCard", "CD", "Pen", "Pencil", "Bread", "BreadSliced",
})
METAL = "Metal"

_AFFORDANCES = ("receptacle", "toggleable", "breakable", "canFillWithLiquid", "dirtyable", "cookable",
                "sliceable", "openable", "pickupable")


@dataclass(frozen=True)
class TypeInfo:
    """Affordances and defaults of one AI2-THOR object type."""

    name: str
    receptacle: bool = False
    toggleable: bool = False
    breakable: bool = False
    canFillWithLiquid: bool = False
    dirtyable: bool = False
    cookable: bool = False
    sliceable: bool = False
    openable: bool = False
    pickupable: bool = False
    isHeatSource: bool = False
    isToggled: bool = False  # default state in a fresh scene
    isOpen: bool = False
    materials: tuple[str, ...] = ()
    default_parent: str | None = None  # type of the usual parent receptacle

    @property
    def metallic(self) -> bool:
        return METAL in self.materials

    @property
    def flammable(self) -> bool:
        return self.name in FLAMMABLE_TYPES or (bool(self.materials) and self.materials[0] in FLAMMABLE_MATERIALS
                                                and METAL not in self.materials)

    @property
    def electrical(self) -> bool:
        return self.name in ELECTRICAL


def _t(name: str, flags: str = "", mats: str = "", parent: str | None = None, **kw: bool) -> TypeInfo:
    f = set(flags.split())
    return TypeInfo(name, *(a in f for a in _AFFORDANCES), materials=tuple(mats.split()), default_parent=parent, **kw)


# Embedded fallback (a subset of AI2-THOR's types, same affordances as the data file).
_EMBEDDED = {t.name: t for t in [
    _t("Apple", "pickupable sliceable", "Food", "CounterTop"),
    _t("Bowl", "receptacle breakable canFillWithLiquid dirtyable pickupable", "Glass", "CounterTop"),
    _t("Bread", "pickupable sliceable", "Food", "CounterTop"),
    _t("Book", "openable pickupable", "Paper", "Desk"),
    _t("Cabinet", "receptacle openable", "Wood"),
    _t("Candle", "toggleable pickupable", "Wax", "Shelf"),
    _t("CellPhone", "toggleable breakable pickupable", "Metal Glass", "Desk"),
    _t("Cloth", "dirtyable pickupable", "Fabric", "CounterTop"),
    _t("CoffeeMachine", "receptacle toggleable", "Metal", "CounterTop"),
    _t("CounterTop", "receptacle", "Wood"),
    _t("Cup", "receptacle breakable canFillWithLiquid dirtyable pickupable", "Glass", "CounterTop"),
    _t("Desk", "receptacle", "Wood"),
    _t("DeskLamp", "toggleable", "Metal Fabric", "Desk", isToggled=True),
    _t("Drawer", "receptacle openable", "Wood"),
    _t("Egg", "breakable sliceable pickupable cookable", "Food", "Fridge"),
    _t("Faucet", "toggleable", ""),
    _t("Floor", "receptacle", "Wood"),
    _t("FloorLamp", "toggleable", "Metal", "Floor", isToggled=True),
    _t("Fork", "pickupable", "Metal", "Drawer"),
    _t("Fridge", "receptacle openable", "", "Floor"),
    _t("GarbageCan", "receptacle", "Plastic", "Floor"),
    _t("HousePlant", "canFillWithLiquid", "Organic", "CounterTop"),
    _t("Kettle", "canFillWithLiquid openable pickupable", "Metal", "StoveBurner"),
    _t("Knife", "pickupable", "Metal Plastic", "Drawer"),
    _t("Laptop", "toggleable breakable openable pickupable", "Metal Plastic Glass", "Desk", isOpen=True),
    _t("LightSwitch", "toggleable", "", isToggled=True),
    _t("Microwave", "receptacle toggleable openable", "Metal Glass", isHeatSource=True),
    _t("Mirror", "breakable dirtyable", "Glass"),
    _t("Mug", "receptacle breakable canFillWithLiquid dirtyable pickupable", "Ceramic", "CounterTop"),
    _t("Newspaper", "pickupable", "Paper", "Desk"),
    _t("Pan", "receptacle dirtyable pickupable", "Metal", "StoveBurner"),
    _t("Plate", "receptacle breakable dirtyable pickupable", "Ceramic", "Cabinet"),
    _t("Pot", "receptacle canFillWithLiquid dirtyable pickupable", "Metal", "StoveBurner"),
    _t("Potato", "pickupable sliceable cookable", "Food", "CounterTop"),
    _t("Shelf", "receptacle", "Wood"),
    _t("Sink", "", ""),
    _t("SinkBasin", "receptacle", ""),
    _t("Spoon", "pickupable", "Metal", "Drawer"),
    _t("StoveBurner", "receptacle", "Metal", isHeatSource=True),
    _t("StoveKnob", "toggleable", ""),
    _t("Television", "toggleable breakable", "Plastic Metal", "TVStand"),
    _t("Toaster", "receptacle toggleable", "Metal", "CounterTop", isHeatSource=True),
    _t("Tomato", "pickupable sliceable", "Food", "CounterTop"),
    _t("Vase", "breakable pickupable", "Glass", "Shelf"),
    _t("WateringCan", "canFillWithLiquid pickupable", "Plastic", "Floor"),
    _t("Window", "breakable", "Glass"),
    _t("WineBottle", "breakable canFillWithLiquid pickupable", "Glass", "CounterTop"),
]}


def _from_record(name: str, rec: dict[str, Any], profile: dict[str, Any] | None) -> TypeInfo:
    src = profile or rec
    parents = rec.get("parentReceptacles") or []
    parent = parents[0].split("|")[0] if parents else None
    kw: dict[str, Any] = {a: bool(src.get(a, rec.get(a, False))) for a in _AFFORDANCES}
    kw["receptacle"] = bool(rec.get("receptacle", False))
    return TypeInfo(name, isHeatSource=bool(rec.get("isHeatSource", False)), isToggled=bool(rec.get("isToggled")),
                    isOpen=bool(rec.get("isOpen")), materials=tuple(rec.get("salientMaterials") or ()),
                    default_parent=parent if parent != name else None, **kw)


@lru_cache(maxsize=4)
def _load(data_dir: str | None) -> tuple[dict[str, TypeInfo], dict[str, Any], str]:
    if data_dir is None:
        return dict(_EMBEDDED), {}, "embedded"
    base = Path(data_dir) / "pro2guard"
    meta_p, types_p = base / "ai2thor_object_meta.json", base / "ai2thor_object_types.json"
    if not meta_p.is_file():
        return dict(_EMBEDDED), {}, "embedded"
    try:
        meta = json.loads(meta_p.read_text())
        profiles = json.loads(types_p.read_text()).get("type_profiles", {}) if types_p.is_file() else {}
        table = {name: _from_record(name, rec, profiles.get(name)) for name, rec in meta["obj_types"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"cannot read AI2-THOR object metadata {meta_p}: {exc}") from None
    for name, t in _EMBEDDED.items():  # types the data file lacks (none expected)
        table.setdefault(name, t)
    return table, meta.get("scenes", {}), str(meta_p)


def type_table(data_dir: str | Path | None = None) -> tuple[dict[str, TypeInfo], dict[str, Any], str]:
    """``(types, scenes, source)``: type name -> TypeInfo, scene name -> notes, and where they came from.

    ``data_dir`` is the benchmark data folder; None (or a folder without the metadata file) gives the
    embedded table."""
    return _load(str(data_dir) if data_dir else None)
