"""Demos of the library on embedded defaults (``agentguard demo``); users of the library only."""
