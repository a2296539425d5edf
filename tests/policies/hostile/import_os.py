# hostile: plain import of os
# args: {"x": 7, "xs": "LIST10000"}
import os
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    os.system('touch MARKER_PATH')
    return 0
