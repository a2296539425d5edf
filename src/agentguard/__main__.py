"""``python -m agentguard``: the command line; a Ctrl-C while it is imported is ``aborted``, exit 130 (the package's
own import is covered in ``agentguard/__init__.py``, the console script by ``agentguard_entry``)."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:
    sys.stderr.write("aborted\n")
    raise SystemExit(130) from None

if __name__ == "__main__":
    main()
