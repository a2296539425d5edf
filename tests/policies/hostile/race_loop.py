# hostile: a long loop shared by concurrent threads (concurrency race)
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    n = 0
    for a in xs:
        for b in xs:
            n = n + 1
    return 0
