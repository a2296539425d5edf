"""Specifications of the shipped policies, one module per policy, written from the rule text alone.

Each module holds ``RULE`` (the natural-language rule), ``CONSTANTS``, ``SIGNATURE``/``RETURNS``/``CODES``/
``DOMAIN`` (the extracted facts and their finite domain), ``reference`` (the rule as a predicate over the
facts), ``BOUNDARY`` (rows a reviewer reads off the rule text) and ``CONTRACT`` (the Nagini contract every
implementation carries verbatim). :mod:`agentguard.policies.conformance` loads and checks them.
"""
