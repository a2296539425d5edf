# hostile: a loop growing a list by concatenation
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    y = [1]
    for a in xs:
        for b in xs:
            y = y + [a]
    return 0
