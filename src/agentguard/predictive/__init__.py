"""agentguard.predictive"""
