# hostile: *args to smuggle values
# args: {"x": 1}
from nagini_contracts.contracts import *
from typing import List

def check(*x) -> int:
    Ensures(Result() >= 0)
    return 0
