# hostile: dunder hidden in Ensures
# args: {"x": 1}
from nagini_contracts.contracts import *
from typing import List

def check(x: int) -> int:
    Ensures(x.__class__ is int)
    return 0
