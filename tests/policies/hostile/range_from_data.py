# hostile: for over range(x) with x = 2**62
# args: {"x": 4611686018427387904, "xs": [1]}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    for i in range(x):
        y = i
    return 0
