"""agentguard.calibration"""
