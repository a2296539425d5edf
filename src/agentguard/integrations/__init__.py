"""agentguard.integrations"""
