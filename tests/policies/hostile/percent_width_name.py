# hostile: format string held in a constant
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

FMT = '%0500000000d'

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    y = FMT % x
    return 0
