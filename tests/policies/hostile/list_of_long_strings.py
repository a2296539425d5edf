# hostile: 10^4-element lists of distinct 10^4-character strings (10^8 characters per name passed the element count)
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

S = "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq"

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    t = S + S + S + S + S + S + S + S
    u = t + t + t + t + t + t + t + t
    v = u + u + u + u + u + u + u + u
    a = [v]
    b = [v]
    for i in xs:
        a = a + [v + "x"]
        b = b + [v + "y"]
    return 0
