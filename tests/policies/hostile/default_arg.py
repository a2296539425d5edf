# hostile: default value that runs at load
# args: {"x": 1}
from nagini_contracts.contracts import *
from typing import List

def check(x: int = open('MARKER_PATH', 'w')) -> int:
    Ensures(Result() >= 0)
    return 0
