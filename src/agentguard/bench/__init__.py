"""The papers' evaluations, as users of the library: each module reproduces one table or figure.

Nothing under the mechanism packages imports this package; ``agentguard bench ...`` commands call it.
"""
