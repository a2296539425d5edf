# hostile: __import__ call
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    __import__('os').system('touch MARKER_PATH')
    return 0
