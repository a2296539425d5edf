# hostile: '%0500000000d' % x: one C-level op building 500 MB
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    y = '%0500000000d' % x
    return 0
