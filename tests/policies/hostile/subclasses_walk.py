# hostile: object subclasses walk to os._wrap_close
# args: {"x": 7, "xs": "LIST10000"}
from nagini_contracts.contracts import *
from typing import List

def check(x: int, xs: List[int]) -> int:
    Ensures(Result() >= 0)
    y = ().__class__.__bases__[0].__subclasses__()
    return 0
