# hostile: augmented slice assignment
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    y = xs[0:10]
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    y[0:0] += y
    return 0
