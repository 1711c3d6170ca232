"""Analyses of a trace that run no policy: inspect (usage accounting, cache breaks), validate,
calibrate, the preset check."""
