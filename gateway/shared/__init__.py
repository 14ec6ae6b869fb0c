"""Small helpers every wing uses: JSON values and schemas, display, redaction, logs, the version."""
