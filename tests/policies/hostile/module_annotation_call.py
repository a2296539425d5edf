# hostile: module-level annotation that calls at load
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

X: __import__('os').system('touch MARKER_PATH') = 1
def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    return 0
