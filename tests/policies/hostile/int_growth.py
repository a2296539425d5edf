# hostile: int growth by a literal factor
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    y = x
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    y = y * 1000000
    return 0
