#!/usr/bin/env bash
# Creates the separate virtual environment Nagini needs (it pins old pytest/mypy/z3).
# Filled in by the verified-policies work; a no-op until then.
exit 0
