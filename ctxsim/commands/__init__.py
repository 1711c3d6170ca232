"""CLI commands: one module per command (or command group), each registering on `ctxsim.cli.app`."""
