"""Switch-SWE's session agent for Harbor (agent.py): `--agent switch_swe_harbor.agent:SwitchSweSession`."""
