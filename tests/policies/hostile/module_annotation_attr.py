# hostile: module-level annotation attribute chain
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

X: int.__class__.__mro__ = 1
def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    return 0
