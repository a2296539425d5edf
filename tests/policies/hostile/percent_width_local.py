# hostile: format string held in a local
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    f = '%0500000000d'
    y = f % x
    return 0
