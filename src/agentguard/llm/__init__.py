"""agentguard.llm"""
