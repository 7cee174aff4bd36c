"""What a person reads and takes home: status, the manifest, pull, the checklist, evidence and the report."""
