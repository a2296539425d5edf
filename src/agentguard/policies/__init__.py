"""agentguard.policies"""
