# hostile: return annotation that runs at def time
# args: {"x": 1}
from nagini_contracts.contracts import *
from typing import List

def check(x: int) -> open('MARKER_PATH', 'w'):
    Ensures(Result() >= 0)
    return 0
