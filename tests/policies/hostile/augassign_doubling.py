# hostile: doubling with +=
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    s = [1, 2]
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    s += s
    return 0
