# hostile: parameter annotation that runs at def time
# args: {"x": 1}
from nagini_contracts.contracts import *
from typing import List

def check(x: open('MARKER_PATH', 'w')) -> int:
    Ensures(Result() >= 0)
    return 0
