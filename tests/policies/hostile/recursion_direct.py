# hostile: direct recursion
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def f(x: int) -> int:
    return f(x + 1)

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    return f(x)
