# hostile: range over a huge literal
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    for i in range(1000000000000):
        x = x + 1
    return 0
