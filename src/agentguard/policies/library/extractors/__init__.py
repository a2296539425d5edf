"""The argument extractor of each shipped policy, one module per policy, named after the policy file.

Each module defines ``extractor(**options) -> ArgumentExtractor``; build one with
:func:`agentguard.policies.library_extractor` (``library_extractor("mind2web_sc")``).
"""
