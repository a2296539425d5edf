# hostile: from-import of os.system
# args: {"x": 7, "xs": "LIST10000"}
from os import system
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    system('touch MARKER_PATH')
    return 0
