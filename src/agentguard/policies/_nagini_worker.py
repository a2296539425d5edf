"""Warm Nagini worker: Nagini's own ``--server`` loop, spoken over stdin/stdout instead of a TCP port.

Runs INSIDE the Nagini virtual environment (``.nagini-venv/bin/python _nagini_worker.py [nagini flags]``),
so it must not import agentguard. Nagini's server mode (``nagini --server``) starts one JVM, loads the
Viper prelude once and then verifies one file per request received on a ZeroMQ REP socket bound to the fixed
address ``tcp://*:5555``. A fixed, all-interfaces port is a poor fit for a library (two runs collide, and it
listens on the network), so this worker hands Nagini a tiny stand-in for ``zmq`` whose socket reads requests
from stdin and writes replies to stdout, one JSON object per line, and then calls Nagini's unchanged
``main()`` with ``--server``. Everything else (translation, Silicon, counterexamples) is Nagini's code path.

Protocol: the worker writes ``{"ready": true}`` once the prelude is loaded; then for each request line
``{"path": "/abs/file.py"}`` it writes ``{"output": "<Nagini's report text>", "seconds": float}``.
"""

import json
import sys
import time
import traceback
import types

_PROTO_OUT = sys.stdout
_PROTO_IN = sys.stdin
sys.stdout = sys.stderr  # anything Nagini prints outside a reply must not corrupt the protocol stream

_state = {"started": 0.0}


def _send(obj: dict) -> None:
    _PROTO_OUT.write(json.dumps(obj) + "\n")
    _PROTO_OUT.flush()


class _PipeSocket:
    def bind(self, address: str) -> None:  # Nagini binds tcp://*:5555; we bind nothing
        pass

    def recv_string(self) -> str:
        if not _state.get("announced"):
            _state["announced"] = True
            _send({"ready": True})
        line = _PROTO_IN.readline()
        if not line:
            sys.exit(0)
        request = json.loads(line)
        _state["started"] = time.perf_counter()
        return request["path"]

    def send_string(self, text: str) -> None:
        _send({"output": text, "seconds": time.perf_counter() - _state["started"]})


class _Context:
    def socket(self, kind: int) -> _PipeSocket:
        return _PipeSocket()


def _install_fake_zmq() -> None:
    zmq = types.ModuleType("zmq")
    zmq.Context = _Context  # type: ignore[attr-defined]
    zmq.REP = 4  # type: ignore[attr-defined]
    sys.modules["zmq"] = zmq


def _guard_crashes() -> None:
    """A JVM exception inside one request must produce a reply, not kill the warm worker."""
    import nagini_translation.main as nm

    original = nm.translate_and_verify

    def safe(python_file, jvm, args, print=print, arp=False, base_dir=None):  # noqa: A002
        try:
            return original(python_file, jvm, args, print, arp=arp, base_dir=base_dir)
        except BaseException as exc:  # noqa: BLE001 - report every failure as text
            print("Verification crashed: " + type(exc).__name__ + ": " + str(exc).splitlines()[0]
                  if str(exc) else "Verification crashed: " + type(exc).__name__)
            traceback.print_exc(file=sys.stderr)
            return False

    nm.translate_and_verify = safe


def main() -> None:
    _install_fake_zmq()
    _guard_crashes()
    import nagini_translation.main as nm

    sys.argv = ["nagini", "--server", *sys.argv[1:], "_unused_.py"]
    nm.main()


if __name__ == "__main__":
    main()
