"""agentguard.envs"""
