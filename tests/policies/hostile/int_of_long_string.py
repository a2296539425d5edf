# hostile: int() of a long digit string
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    s = '9999999999'
    s = s + s
    s = s + s
    s = s + s
    s = s + s
    s = s + s
    s = s + s
    s = s + s
    s = s + s
    s = s + s
    y = int(s)
    return 0
