# hostile: async function
# args: {"x": 1}
from nagini_contracts.contracts import *
from typing import List

async def check(x: int) -> int:
    Ensures(Result() >= 0)
    return 0
