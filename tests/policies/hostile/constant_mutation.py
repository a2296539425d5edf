# hostile: mutating a module constant to keep state between calls
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

STATE = [0]

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    STATE[0] = STATE[0] + 1
    return 0
