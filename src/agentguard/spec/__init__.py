"""agentguard.spec"""
