"""A bounded cache of configuration files' readings, checked against every file a reading read (session 26).

The network guard reads the clients' configuration files on every decision (:mod:`.network_configs`); parsing them
again each time cost a git decision a good part of its time. :func:`read_cached` keeps a reading while every file it
read (the file, its includes, the files it names, and those it found missing) has the same
:data:`.network_files.Stamp` (device, inode, size, modification and change times): the same answer as reading again,
for files not rewritten within the file system's time resolution with the same size and inode. The s25 cache was keyed
by the first file's stamp only, so an include changed after a first decision was not read (a git ``insteadOf`` to an
internal host passed).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Callable, Hashable

from .network_files import Stamp, recorded, recording, stamp

__all__ = ["CACHE_SIZE", "Reading", "read_cached"]

#: a reading of a configuration file: (destinations, commands)
Reading = tuple[tuple[str, ...], tuple[str, ...]]
#: how many readings are kept (least recently used dropped)
CACHE_SIZE = 512
_CACHE: "OrderedDict[tuple[str, Hashable], tuple[tuple[tuple[str, Stamp], ...], Reading]]" = OrderedDict()
_LOCK = threading.Lock()


def _fresh(files: tuple[tuple[str, Stamp], ...]) -> bool:
    try:
        return all(stamp(p) == s for p, s in files)
    except OSError:
        return False


def read_cached(path: str, key: Hashable, parse: Callable[[], Reading]) -> Reading | None:
    """``parse()``'s reading of the file ``path`` (``key``: how it is read), kept while every file it read is as it
    was; None for a missing file (recorded: an including reading depends on its absence). OSError when the file
    cannot be looked at. The files read are added to any :func:`.network_files.recording` open around the call."""
    entry = (path, key)
    with _LOCK:
        hit = _CACHE.get(entry)
    if hit is not None and _fresh(hit[0]):
        with _LOCK:
            if entry in _CACHE:
                _CACHE.move_to_end(entry)
        recorded(hit[0])   # (an includer's reading depends on these files too)
        return hit[1]
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        recorded([(path, None)])   # (a missing include that appears later changes the includer's reading)
        return None
    with recording() as files:
        found = parse()
    with _LOCK:
        _CACHE[entry] = (tuple(dict.fromkeys(files)), found)
        _CACHE.move_to_end(entry)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return found
