"""Support the pipeline leans on but that is not part of it: files, processes, memos, the collector,
the redaction of secrets in what is shown."""
