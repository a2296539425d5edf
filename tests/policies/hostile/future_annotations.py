# hostile: from __future__ import annotations to defer tricks
# args: {"x": 7, "xs": "LIST10000"}
from __future__ import annotations
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    return 0
