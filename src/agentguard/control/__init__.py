"""agentguard.control"""
