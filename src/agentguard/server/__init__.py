"""agentguard.server"""
