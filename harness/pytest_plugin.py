"""pytest plugin (placeholder until the runner lands): loaded by the pytest11 entry point."""
