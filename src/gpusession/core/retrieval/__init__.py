"""What a person reads: status, the checklist, evidence, compare, export and the report (the copy home is ``core.copyhome``)."""
