# hostile: class with a __del__ hook
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

class C:
    def __del__(self):
        open('MARKER_PATH', 'w')

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    return 0
